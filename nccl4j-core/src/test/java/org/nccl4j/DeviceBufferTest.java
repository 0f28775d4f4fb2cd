package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link DeviceBuffer} over {@link FakeCuda}: allocation and freeing (once), copies of every array type and of
 * direct and heap ByteBuffers (checked in the fake device memory, byte by byte, as well as by round trip),
 * copies that do not fit, slices (refused once their parent is closed; closing one frees nothing), counts of whole
 * elements only, wrapped memory, fill, toString; and the open-resource list of
 * {@link Nccl#openResources()} for every kind of tracked resource.
 */
class DeviceBufferTest extends StubFixture {

    private static ByteBuffer le(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    }

    private byte[] device(DeviceBuffer b) {
        return cuda.read(b.address(), (int) b.bytes());
    }

    // ---------------------------------------------------------------- allocation

    @Test
    void allocateOnADeviceAndFreeOnce() {
        cuda.clearCalls();
        DeviceBuffer b = DeviceBuffer.allocate(2, 64);
        assertEquals(List.of("getDevice", "setDevice device=2", "malloc device=2 bytes=64", "setDevice device=0"),
                cuda.calls(), "cudaMalloc with the buffer's device current, then the previous device back");
        assertEquals(64, b.bytes());
        assertEquals(2, b.device());
        assertEquals(FakeCuda.BASE + 2 * FakeCuda.STRIDE + 0x1000, b.address());
        assertEquals(64, cuda.allocation(b.address()).data.length);
        assertEquals(2, cuda.allocation(b.address()).device);
        assertFalse(b.isClosed());
        assertEquals("DeviceBuffer[0x7e2000001000, 64 bytes, device 2, CUDA_MALLOC]", b.toString());
        assertEquals(8, b.count(DataType.FLOAT64));
        assertEquals(32, b.count(DataType.BFLOAT16));
        assertEquals(64, b.count(DataType.FLOAT8_E4M3));

        cuda.clearCalls();
        b.close();
        assertEquals(List.of("getDevice", "setDevice device=2", "free address=0x7e2000001000 device=2",
                "setDevice device=0"), cuda.calls(), "cudaFree on the buffer's device");
        assertTrue(b.isClosed());
        assertEquals("DeviceBuffer[0x7e2000001000, 64 bytes, device 2, CUDA_MALLOC, closed]", b.toString());
        b.close();
        b.close();
        assertEquals(1, cuda.calls("free").size(), "freed once");
        assertEquals(0, cuda.liveAllocations());
    }

    @Test
    void copyFromHostWaitsForTheDataOnTheBuffersDevice() {
        DeviceBuffer b = buffer(2, 4, DataType.INT32);
        cuda.clearCalls();
        b.copyFrom(new int[] {1, 2, 3, 4});
        List<String> calls = cuda.calls();
        assertEquals(List.of("getDevice", "setDevice device=2"), calls.subList(0, 2));
        assertTrue(calls.get(2).startsWith("memcpy ") && calls.get(2).endsWith("bytes=16 kind=1"), calls.get(2));
        assertEquals(List.of("streamSynchronize stream=0x0", "setDevice device=0"), calls.subList(3, 5),
                "pageable cudaMemcpy may return before the DMA lands: the default stream is synchronized on device 2");
    }

    @Test
    void allocateOnTheCurrentDeviceDoesNotSwitch() {
        cuda.clearCalls();
        DeviceBuffer b = buffer(0, 3, DataType.FLOAT64);
        assertEquals(24, b.bytes());
        assertEquals(List.of("getDevice", "malloc device=0 bytes=24"), cuda.calls());
    }

    // ---------------------------------------------------------------- copies of arrays

    @Test
    void floatArraysRoundTripAndAreLittleEndianOnTheDevice() {
        DeviceBuffer b = buffer(1, 4, DataType.FLOAT32);
        float[] src = {1.5f, -2.25f, Float.MAX_VALUE, Float.NaN};
        assertSame(b, b.copyFrom(src));
        ByteBuffer expected = le(16);
        for (float f : src) {
            expected.putFloat(f);
        }
        assertArrayEquals(expected.array(), device(b));
        float[] back = new float[4];
        assertSame(back, b.copyTo(back));
        assertArrayEquals(src, back);
        java.util.Map<String, String> m = FakeCuda.args(cuda.calls("memcpy").get(0));
        assertEquals("1", m.get("kind"), "host to device");
        assertEquals(hex(b.address()), m.get("dst"));
        assertEquals("16", m.get("bytes"));
        assertEquals("2", FakeCuda.args(cuda.calls("memcpy").get(1)).get("kind"), "device to host");
    }

    @Test
    void doubleArraysRoundTrip() {
        DeviceBuffer b = buffer(0, 3, DataType.FLOAT64);
        double[] src = {Math.PI, -0.0, Double.MIN_VALUE};
        b.copyFrom(src);
        ByteBuffer expected = le(24);
        for (double d : src) {
            expected.putDouble(d);
        }
        assertArrayEquals(expected.array(), device(b));
        assertArrayEquals(src, b.copyTo(new double[3]));
    }

    @Test
    void intArraysRoundTrip() {
        DeviceBuffer b = buffer(0, 4, DataType.INT32);
        int[] src = {1, -1, Integer.MIN_VALUE, 0x01020304};
        b.copyFrom(src);
        ByteBuffer expected = le(16);
        for (int i : src) {
            expected.putInt(i);
        }
        assertArrayEquals(expected.array(), device(b));
        assertArrayEquals(src, b.copyTo(new int[4]));
    }

    @Test
    void longArraysRoundTrip() {
        DeviceBuffer b = buffer(3, 2, DataType.INT64);
        long[] src = {Long.MIN_VALUE, 0x0102030405060708L};
        b.copyFrom(src);
        ByteBuffer expected = le(16);
        for (long l : src) {
            expected.putLong(l);
        }
        assertArrayEquals(expected.array(), device(b));
        assertArrayEquals(src, b.copyTo(new long[2]));
    }

    @Test
    void shortArraysRoundTrip() {
        DeviceBuffer b = buffer(0, 3, DataType.FLOAT16);
        short[] src = {0x3c00, (short) 0xc000, 0x7bff};
        b.copyFrom(src);
        assertArrayEquals(new byte[] {0x00, 0x3c, 0x00, (byte) 0xc0, (byte) 0xff, 0x7b}, device(b));
        assertArrayEquals(src, b.copyTo(new short[3]));
    }

    @Test
    void byteArraysRoundTrip() {
        DeviceBuffer b = buffer(0, 5, DataType.UINT8);
        byte[] src = {1, 2, 3, (byte) 0xff, 0};
        b.copyFrom(src);
        assertArrayEquals(src, device(b));
        assertArrayEquals(src, b.copyTo(new byte[5]));
    }

    @Test
    void shorterCopiesTouchOnlyTheStart() {
        DeviceBuffer b = buffer(2, 8, DataType.UINT8);
        b.fill(0x5a);
        b.copyFrom(new byte[] {1, 2, 3});
        assertArrayEquals(new byte[] {1, 2, 3, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a}, device(b));
        assertArrayEquals(new byte[] {1, 2}, b.copyTo(new byte[2]));
        assertArrayEquals(new int[] {0x5a030201}, b.copyTo(new int[1]));
        b.copyFrom(new byte[0]);
        assertArrayEquals(new byte[0], b.copyTo(new byte[0]));
    }

    // ---------------------------------------------------------------- copies of ByteBuffers

    @Test
    void directByteBuffersRoundTripAndKeepTheirPosition() {
        DeviceBuffer b = buffer(0, 8, DataType.UINT8);
        ByteBuffer src = ByteBuffer.allocateDirect(8);
        for (int i = 0; i < 8; i++) {
            src.put(i, (byte) (10 + i));
        }
        b.copyFrom(src);
        assertEquals(0, src.position());
        assertArrayEquals(new byte[] {10, 11, 12, 13, 14, 15, 16, 17}, device(b));
        ByteBuffer dst = ByteBuffer.allocateDirect(8);
        assertSame(dst, b.copyTo(dst));
        assertEquals(0, dst.position());
        for (int i = 0; i < 8; i++) {
            assertEquals(10 + i, dst.get(i));
        }
    }

    @Test
    void heapByteBuffersRoundTripAndKeepTheirPosition() {
        DeviceBuffer b = buffer(0, 8, DataType.UINT8);
        ByteBuffer src = ByteBuffer.wrap(new byte[] {9, 9, 1, 2, 3, 4, 9}).position(2).limit(6);
        b.copyFrom(src);
        assertEquals(2, src.position());
        assertArrayEquals(new byte[] {1, 2, 3, 4, 0, 0, 0, 0}, device(b), "the remaining bytes, from the position");
        ByteBuffer dst = ByteBuffer.wrap(new byte[7]).position(3);
        b.copyTo(dst);
        assertEquals(3, dst.position());
        assertArrayEquals(new byte[] {0, 0, 0, 1, 2, 3, 4}, dst.array(), "into the remaining bytes");
    }

    @Test
    void directByteBuffersCopyFromAndToTheirPosition() {
        DeviceBuffer b = buffer(0, 8, DataType.UINT8);
        ByteBuffer src = ByteBuffer.allocateDirect(7);
        src.put(new byte[] {9, 9, 1, 2, 3, 4, 9}).position(2).limit(6);
        b.copyFrom(src);
        assertEquals(2, src.position());
        assertArrayEquals(new byte[] {1, 2, 3, 4, 0, 0, 0, 0}, device(b), "the remaining bytes, from the position");

        ByteBuffer dst = ByteBuffer.allocateDirect(7).position(3);
        b.copyTo(dst);
        assertEquals(3, dst.position());
        byte[] all = new byte[7];
        dst.duplicate().clear().get(all);
        assertArrayEquals(new byte[] {0, 0, 0, 1, 2, 3, 4}, all, "into the remaining bytes");

        ByteBuffer slice = ByteBuffer.allocateDirect(16).position(5).slice();
        slice.put(0, (byte) 77);
        b.copyFrom(slice.limit(1));
        assertEquals(77, device(b)[0], "a sliced direct buffer starts at its own start");
    }

    @Test
    void toByteBufferIsALittleEndianCopyOfTheWholeBuffer() {
        DeviceBuffer b = buffer(1, 2, DataType.INT32);
        b.copyFrom(new int[] {0x11223344, -2});
        ByteBuffer bb = b.toByteBuffer();
        assertTrue(bb.isDirect());
        assertEquals(ByteOrder.LITTLE_ENDIAN, bb.order());
        assertEquals(8, bb.remaining());
        assertEquals(0x11223344, bb.getInt(0));
        assertEquals(-2, bb.getInt(4));
    }

    // ---------------------------------------------------------------- copies that do not fit, closed buffers

    @ParameterizedTest(name = "{0}")
    @CsvSource({"float[], 9, 36", "double[], 5, 40", "int[], 9, 36", "long[], 5, 40", "short[], 17, 34",
        "byte[], 33, 33", "ByteBuffer, 33, 33"})
    void tooLargeCopiesAreRejected(String what, int length, long bytes) {
        DeviceBuffer b = buffer(0, 32, DataType.UINT8);
        Consumer<DeviceBuffer> to;
        Consumer<DeviceBuffer> from;
        switch (what) {
            case "float[]" -> {
                from = d -> d.copyFrom(new float[length]);
                to = d -> d.copyTo(new float[length]);
            }
            case "double[]" -> {
                from = d -> d.copyFrom(new double[length]);
                to = d -> d.copyTo(new double[length]);
            }
            case "int[]" -> {
                from = d -> d.copyFrom(new int[length]);
                to = d -> d.copyTo(new int[length]);
            }
            case "long[]" -> {
                from = d -> d.copyFrom(new long[length]);
                to = d -> d.copyTo(new long[length]);
            }
            case "short[]" -> {
                from = d -> d.copyFrom(new short[length]);
                to = d -> d.copyTo(new short[length]);
            }
            case "byte[]" -> {
                from = d -> d.copyFrom(new byte[length]);
                to = d -> d.copyTo(new byte[length]);
            }
            default -> {
                from = d -> d.copyFrom(ByteBuffer.allocateDirect(length));
                to = d -> d.copyTo(ByteBuffer.allocateDirect(length));
            }
        }
        cuda.clearCalls();
        for (Consumer<DeviceBuffer> op : List.of(from, to)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> op.accept(b));
            assertEquals("the " + what + " holds " + bytes + " bytes but this DeviceBuffer has only 32: copy fewer "
                    + "elements or allocate a larger buffer", e.getMessage());
        }
        assertEquals(List.of(), cuda.calls("memcpy"), "nothing copied");
    }

    @Test
    void aTooLargeHeapByteBufferIsRejected() {
        DeviceBuffer b = buffer(0, 4, DataType.UINT8);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> b.copyFrom(ByteBuffer.allocate(5)));
        assertTrue(e.getMessage().contains("holds 5 bytes but this DeviceBuffer has only 4"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> b.copyTo(ByteBuffer.allocate(6)));
        assertTrue(e.getMessage().contains("holds 6 bytes but this DeviceBuffer has only 4"), e.getMessage());
    }

    @Test
    void aClosedBufferRefusesEverything() {
        DeviceBuffer b = DeviceBuffer.allocate(1, 16);
        b.close();
        cuda.clearCalls();
        List<Executable> ops = List.of(() -> b.copyFrom(new float[1]), () -> b.copyTo(new float[1]),
                () -> b.copyFrom(new byte[0]), () -> b.copyTo(ByteBuffer.allocateDirect(1)),
                () -> b.copyFrom(ByteBuffer.allocate(1)), () -> b.fill(0), b::toByteBuffer, () -> b.slice(0, 1));
        for (Executable op : ops) {
            IllegalStateException e = assertThrows(IllegalStateException.class, op);
            assertEquals("this DeviceBuffer (16 bytes on device 1) is closed", e.getMessage());
        }
        assertEquals(List.of(), cuda.calls());
    }

    // ---------------------------------------------------------------- fill, slices, wrapped memory

    @Test
    void fillRunsOnTheBuffersDevice() {
        DeviceBuffer b = buffer(3, 6, DataType.UINT8);
        cuda.clearCalls();
        assertSame(b, b.fill(0xab));
        assertEquals(List.of("getDevice", "setDevice device=3", "memset address=" + hex(b.address())
                + " value=171 bytes=6 device=3", "setDevice device=0"), cuda.calls());
        byte[] x = new byte[6];
        java.util.Arrays.fill(x, (byte) 0xab);
        assertArrayEquals(x, device(b));
    }

    @Test
    void slicesShareMemoryAndNeverFree() {
        DeviceBuffer b = buffer(1, 32, DataType.UINT8);
        DeviceBuffer s = b.slice(8, 8);
        assertEquals(b.address() + 8, s.address());
        assertEquals(8, s.bytes());
        assertEquals(1, s.device());
        assertEquals("DeviceBuffer[" + hex(b.address() + 8) + ", 8 bytes, device 1, VIEW]", s.toString());
        s.copyFrom(new int[] {1, 2});
        byte[] all = device(b);
        assertEquals(1, all[8]);
        assertEquals(2, all[12]);
        assertEquals(0, all[7]);
        assertEquals(0, all[16]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> s.copyFrom(new int[3]));
        assertTrue(e.getMessage().contains("has only 8"), e.getMessage());
        s.close();
        assertEquals(List.of(), cuda.calls("free"));
        assertFalse(b.isClosed());
        assertEquals(4, b.slice(4, 28).slice(1, 4).address() - b.address() - 1, "a slice of a slice");
        assertEquals(b.address(), b.slice(0, 32).address());
        assertEquals(b.address() + 31, b.slice(31, 1).address());
    }

    private static final String PARENT_CLOSED = ", and that parent buffer was closed: its memory may be freed; keep "
            + "the parent open while its slices are in use";

    @Test
    void aSliceOfAClosedParentRefusesEveryUse() {
        DeviceBuffer parent = DeviceBuffer.allocate(1, 32);
        DeviceBuffer s = parent.slice(8, 16);
        DeviceBuffer ss = s.slice(4, 4);
        parent.close();
        cuda.clearCalls();
        String closedParent = "DeviceBuffer[" + hex(parent.address()) + ", 32 bytes, device 1, CUDA_MALLOC, closed]";
        List<Executable> ops = List.of(s::address, () -> s.copyFrom(new float[1]), () -> s.copyTo(new float[1]),
                () -> s.copyFrom(new byte[0]), () -> s.copyTo(ByteBuffer.allocateDirect(1)),
                () -> s.copyFrom(ByteBuffer.allocate(1)), () -> s.fill(0), s::toByteBuffer, () -> s.slice(0, 1));
        for (Executable op : ops) {
            IllegalStateException e = assertThrows(IllegalStateException.class, op);
            assertEquals("this DeviceBuffer (16 bytes on device 1) is a slice of " + closedParent + PARENT_CLOSED,
                    e.getMessage());
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, ss::address);
        assertEquals("this DeviceBuffer (4 bytes on device 1) is a slice of " + closedParent + PARENT_CLOSED,
                e.getMessage(), "a slice of a slice names the buffer that was closed");
        assertThrows(IllegalStateException.class, () -> ss.copyTo(new byte[1]));
        assertTrue(s.isClosed());
        assertTrue(ss.isClosed());
        assertTrue(s.toString().endsWith(", 16 bytes, device 1, VIEW, parent closed]"), s.toString());
        assertEquals(List.of(), cuda.calls(), "nothing reached CUDA");
        s.close();
        ss.close();
        assertEquals(List.of(), cuda.calls(), "closing the slices frees nothing");
    }

    @Test
    void aSliceOfAClosedParentIsRefusedByCollectivesBeforeNccl() {
        Communicator comm = comm(0, 2);
        Stream stream = stream(0);
        DeviceBuffer parent = DeviceBuffer.allocate(0, 64);
        DeviceBuffer s = parent.slice(32, 32);
        DeviceBuffer ok = buffer(0, 8, DataType.FLOAT32);
        String closedParent = "DeviceBuffer[" + hex(parent.address()) + ", 64 bytes, device 0, CUDA_MALLOC, closed]";
        parent.close();
        mark();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> comm.allReduce(s, DataType.FLOAT32, ReduceOp.SUM, stream));
        assertEquals("buffer is a slice of " + closedParent + PARENT_CLOSED, e.getMessage());
        e = assertThrows(IllegalStateException.class,
                () -> comm.allReduce(ok, s, DataType.FLOAT32, ReduceOp.SUM, stream));
        assertEquals("recv is a slice of " + closedParent + PARENT_CLOSED, e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> comm.send(s, DataType.FLOAT32, 1, stream));
        assertEquals("buffer is a slice of " + closedParent + PARENT_CLOSED, e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> comm.register(s));
        assertEquals("buffer is a slice of " + closedParent + PARENT_CLOSED, e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> comm.createPreMulSum(s, DataType.FLOAT32));
        assertEquals("scalar is a slice of " + closedParent + PARENT_CLOSED, e.getMessage());
        assertEquals(List.of(), newCalls(), "nothing reached NCCL");
        assertEquals(0, comm.operationsEnqueued());
    }

    @Test
    void aSliceOfAClosedSliceIsRefusedButTheParentStaysUsable() {
        DeviceBuffer parent = buffer(2, 32, DataType.UINT8);
        DeviceBuffer s = parent.slice(8, 16);
        DeviceBuffer ss = s.slice(4, 4);
        s.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ss.copyFrom(new byte[1]));
        assertEquals("this DeviceBuffer (4 bytes on device 2) is a slice of DeviceBuffer[" + hex(parent.address() + 8)
                + ", 16 bytes, device 2, VIEW, closed]" + PARENT_CLOSED, e.getMessage(), "names the closed slice");
        assertFalse(parent.isClosed());
        parent.copyFrom(new byte[] {7});
        assertEquals(7, device(parent)[0]);
        assertEquals(parent.address() + 8, parent.slice(8, 4).address(), "new slices of the parent work");
    }

    @Test
    void closingASliceLeavesTheParentUsableAndFreesNothing() {
        DeviceBuffer parent = DeviceBuffer.allocate(1, 32);
        DeviceBuffer s = parent.slice(8, 8);
        cuda.clearCalls();
        s.close();
        s.close();
        assertEquals(List.of(), cuda.calls(), "no cudaFree, no device switch");
        assertTrue(s.isClosed());
        assertFalse(parent.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.copyFrom(new int[1]));
        assertEquals("this DeviceBuffer (8 bytes on device 1) is closed", e.getMessage());
        assertEquals(parent.address() + 8, s.address(), "the memory is alive: the address is a fact, as a closed "
                + "buffer's own");

        parent.copyFrom(new int[] {1, 2, 3, 4, 5, 6, 7, 8});
        assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, parent.copyTo(new int[8]));
        DeviceBuffer again = parent.slice(8, 8);
        assertArrayEquals(new int[] {3, 4}, again.copyTo(new int[2]));
        assertTrue(Nccl.openResources().stream().anyMatch(x -> x.startsWith("DeviceBuffer of 32 bytes on device 1")),
                "the parent is still open and tracked");

        cuda.clearCalls();
        parent.close();
        assertEquals(List.of("free address=" + hex(parent.address()) + " device=1"), cuda.calls("free"),
                "the parent frees its memory, once");
        assertTrue(again.isClosed(), "and its slices follow it");
    }

    @Test
    void gradientViewsAreRefusedOnceTheirBucketsAreClosed() {
        Communicator comm = comm(0, 2);
        GradientBuckets buckets = GradientBuckets.builder(comm).build0(3, 5);
        DeviceBuffer g = buckets.gradient(1);
        assertEquals(20, g.bytes());
        assertEquals(5, g.count(DataType.FLOAT32));
        g.copyFrom(new float[] {1, 2, 3, 4, 5});
        buckets.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.copyTo(new float[5]));
        assertTrue(e.getMessage().startsWith("this DeviceBuffer (20 bytes on device 0) is a slice of DeviceBuffer["),
                e.getMessage());
        assertTrue(e.getMessage().endsWith(", 32 bytes, device 0, CUDA_MALLOC, closed]" + PARENT_CLOSED),
                e.getMessage());
        assertThrows(IllegalStateException.class, g::address);
    }

    @Test
    void awaitMakesTheComputeStreamWaitForOneBucketLaunchingItWhenPendingAndRefusesABadIndex() {
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        GradientBuckets buckets = GradientBuckets.builder(comm).bucketCapMB(20.0 / (1 << 20)).add(3).add(5).build();
        List<String> seen = new java.util.ArrayList<>();
        comm.observe((c, seq, fn, bytes, st) -> seen.add(fn + " " + bytes));
        buckets.ready(1, compute);   // bucket 0 launched
        int waits = cuda.calls("streamWaitEvent").size();
        buckets.await(0, compute);
        assertEquals(List.of("ncclAllReduce 20"), seen, "nothing launched again");
        assertEquals(waits + 1, cuda.calls("streamWaitEvent").size(), "one wait of the compute stream");
        assertEquals("0x" + Long.toHexString(compute.handle()),
                FakeCuda.args(cuda.calls("streamWaitEvent").get(waits)).get("stream"));
        buckets.await(1, compute);   // bucket 1 was never marked ready: launched first, as finish would
        assertEquals(List.of("ncclAllReduce 20", "ncclAllReduce 12"), seen);
        buckets.finish(compute);
        assertEquals(2, seen.size(), "finish launches nothing that await launched");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> buckets.await(2, compute));
        assertTrue(e.getMessage().contains("bucket must be in 0..1, got 2"), e.getMessage());
        assertEquals("compute must not be null",
                assertThrows(NullPointerException.class, () -> buckets.await(0, null)).getMessage());
        buckets.close();
        assertEquals("GradientBuckets is closed",
                assertThrows(IllegalStateException.class, () -> buckets.await(0, compute)).getMessage());
    }

    @Test
    void gradientBucketsLaunchEachBucketOncePerStepAndFinishLaunchesTheRest() {
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        // 3 and 5 floats (12 and 20 bytes) under a 20-byte cap: walking backward, gradient 1 fills bucket 0 and
        // gradient 0 opens bucket 1
        GradientBuckets buckets = GradientBuckets.builder(comm).bucketCapMB(20.0 / (1 << 20)).add(3).add(5).build();
        assertEquals(2, buckets.bucketCount());
        assertEquals(0, buckets.bucketOf(1));
        assertEquals(1, buckets.bucketOf(0));
        List<String> seen = new java.util.ArrayList<>();
        comm.observe((c, seq, fn, bytes, st) -> seen.add(fn + " " + bytes));

        buckets.ready(1, compute);
        assertEquals(List.of("ncclAllReduce 20"), seen, "bucket 0 is complete: launched at once");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> buckets.ready(1, compute));
        assertEquals("gradient 1 (bucket 0) was already marked ready in this step: call finish() before the next step",
                e.getMessage());
        buckets.finish(compute);
        assertEquals(List.of("ncclAllReduce 20", "ncclAllReduce 12"), seen, "finish launches bucket 1, never marked");

        buckets.ready(1, compute);   // a new step: every bucket is pending again
        buckets.ready(0, compute);
        buckets.finish(compute);
        assertEquals(List.of("ncclAllReduce 20", "ncclAllReduce 12", "ncclAllReduce 20", "ncclAllReduce 12"), seen,
                "finish launches nothing that ready() launched");
        buckets.close();
        e = assertThrows(IllegalStateException.class, () -> buckets.ready(0, compute));
        assertEquals("GradientBuckets is closed", e.getMessage());
    }

    @Test
    void countIsRefusedForAPartialElement() {
        DeviceBuffer ten = buffer(0, 10, DataType.UINT8);
        assertEquals(10, ten.count(DataType.INT8));
        assertEquals(5, ten.count(DataType.FLOAT16));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ten.count(DataType.FLOAT32));
        assertEquals("this DeviceBuffer holds 10 bytes, not a multiple of the 4-byte size of FLOAT32 (its element "
                + "count would be truncated): use a buffer whose size is a multiple of 4 bytes or a slice of whole "
                + "elements (slice(0, 8) holds 2)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ten.count(DataType.INT64));
        assertTrue(e.getMessage().contains("not a multiple of the 8-byte size of INT64"), e.getMessage());
        assertTrue(e.getMessage().endsWith("(slice(0, 8) holds 1)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ten.slice(0, 2).count(DataType.FLOAT32));
        assertEquals("this DeviceBuffer holds 2 bytes, not a multiple of the 4-byte size of FLOAT32 (its element "
                + "count would be truncated): use a buffer whose size is a multiple of 4 bytes", e.getMessage(),
                "no slice to propose when not one element fits");
        NullPointerException n = assertThrows(NullPointerException.class, () -> ten.count(null));
        assertEquals("type must not be null", n.getMessage());
    }

    @ParameterizedTest(name = "slice({0}, {1})")
    @CsvSource({"-1, 4", "0, 0", "0, -1", "0, 33", "32, 1", "30, 3", "1, 32", "9223372036854775807, 1",
        "1, 9223372036854775807", "-9223372036854775808, 8"})
    void slicesOutsideTheBufferAreRejected(long offset, long length) {
        DeviceBuffer b = buffer(0, 32, DataType.UINT8);
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> b.slice(offset, length));
        assertEquals("slice(" + offset + ", " + length + ") is outside this buffer of 32 bytes", e.getMessage());
    }

    @Test
    void wrappedMemoryIsNeverFreedNorTracked() {
        DeviceBuffer owner = buffer(2, 16, DataType.UINT8);
        List<String> open = Nccl.openResources();
        DeviceBuffer w = DeviceBuffer.wrap(owner.address(), 16, 2);
        assertEquals(open, Nccl.openResources(), "wrapped memory is someone else's to track");
        assertEquals("DeviceBuffer[" + hex(owner.address()) + ", 16 bytes, device 2, FOREIGN]", w.toString());
        w.copyFrom(new byte[] {42});
        assertEquals(42, cuda.read(owner.address(), 1)[0]);
        cuda.clearCalls();
        w.close();
        w.close();
        assertTrue(w.isClosed());
        assertEquals(List.of(), cuda.calls(), "no cudaFree, no device switch");
        assertEquals(1, cuda.liveAllocations());
    }

    // ---------------------------------------------------------------- open resources

    private static String openEntry(String description) {
        List<String> matches = Nccl.openResources().stream().filter(s -> s.startsWith(description + " at ")).toList();
        assertEquals(1, matches.size(), description + " in " + Nccl.openResources());
        return matches.get(0);
    }

    private static void assertNotOpen(String description) {
        assertTrue(Nccl.openResources().stream().noneMatch(s -> s.startsWith(description)),
                description + " in " + Nccl.openResources());
    }

    @Test
    void unclosedResourcesAreListedWithWhereTheyWereMade() {
        DeviceBuffer b = DeviceBuffer.allocate(3, 12345);
        DeviceBuffer n = DeviceBuffer.allocateNccl(1, 777);
        Stream s = Stream.create(3);
        Event e = Event.create(2);
        Communicator c = Communicator.create(5, 7, testId(), 0);
        String[] descriptions = {"DeviceBuffer of 12345 bytes on device 3 (CUDA_MALLOC)",
            "DeviceBuffer of 777 bytes on device 1 (NCCL_MEM_ALLOC)", "Stream on device 3", "Event on device 2",
            "Communicator rank 5 of 7 on device 0"};
        for (String d : descriptions) {
            String entry = openEntry(d);
            assertTrue(entry.contains("DeviceBufferTest.unclosedResourcesAreListedWithWhereTheyWereMade"),
                    "names the allocating frame: " + entry);
        }
        b.close();
        assertNotOpen(descriptions[0]);
        n.close();
        assertNotOpen(descriptions[1]);
        s.close();
        assertNotOpen(descriptions[2]);
        e.close();
        assertNotOpen(descriptions[3]);
        c.close();
        assertNotOpen(descriptions[4]);
    }

    @Test
    void abortedCommunicatorsAreNoLongerOpen() {
        Communicator c = Communicator.create(4, 9, testId(), 0);
        openEntry("Communicator rank 4 of 9 on device 0");
        c.abort();
        assertNotOpen("Communicator rank 4 of 9 on device 0");
    }

    @Test
    void slicesWrappedAndDefaultStreamsAreNotTracked() {
        DeviceBuffer b = buffer(0, 4096, DataType.UINT8);
        List<String> open = Nccl.openResources();
        b.slice(0, 100);
        Stream.wrap(0x1234, 0);
        Stream.defaultStream(1);
        assertEquals(open, Nccl.openResources());
    }
}
