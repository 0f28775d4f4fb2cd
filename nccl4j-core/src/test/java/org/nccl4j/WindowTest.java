package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.StubNccl;

/**
 * Symmetric windows ({@link Window}, {@link Communicator#registerWindow}) against the stub NCCL 2.28.3: each call
 * reaches NCCL with the flag NCCL_WIN_COLL_SYMMETRIC (1), the buffer's address and size; a window made by
 * {@code allocate} deregisters before it frees; closing is idempotent and, after the communicator, deregisters
 * nothing; what NCCL would refuse, or what cannot work, is refused before NCCL with a message that names the
 * argument and the fix; and an NCCL 2.27 look-alike (the full stub reporting 2.27.5) skips the 4096-byte check of
 * 2.28 and refuses the CTA policy ZERO.
 */
class WindowTest extends StubFixture {

    private static <T extends Throwable> T refused(Class<T> type, org.junit.jupiter.api.function.Executable call,
            String... parts) {
        T e = assertThrows(type, call);
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "'" + p + "' not in: " + e.getMessage());
        }
        return e;
    }

    /** The functions called since the mark, without the ncclGetLastError of an exception's message. */
    private List<String> ncclCalls() {
        List<String> names = newCallNames();
        names.remove("ncclGetLastError");
        return names;
    }

    private DeviceBuffer ncclBuffer(int device, long bytes) {
        return later(DeviceBuffer.allocateNccl(device, bytes));
    }

    // ---------------------------------------------------------------- what reaches NCCL

    @Test
    void registerWindowPassesTheBufferAndTheSymmetricFlag() {
        Communicator c = comm(0, 2);
        DeviceBuffer b = ncclBuffer(0, 1 << 20);
        mark();
        Window w = c.registerWindow(b);
        assertEquals(Map.of("comm", hex(c.handle()), "buff", hex(b.address()), "size", "1048576", "flags", "1"),
                only("ncclCommWindowRegister"));
        assertEquals(List.of("ncclCommWindowRegister"), newCallNames(), "one NCCL call, nothing allocated");
        assertTrue(w.handle() >= 0xC000_0000L && w.handle() < 0xD000_0000L, hex(w.handle()));
        assertSame(b, w.buffer());
        assertSame(c, w.communicator());
        assertEquals(1 << 20, w.bytes());
        assertFalse(w.ownsMemory());
        assertEquals("Window[handle " + hex(w.handle()) + ", 1048576 bytes at " + hex(b.address()) + ", rank 0 of 2]",
                w.toString());
        mark();
        w.close();
        w.close();
        assertEquals(Map.of("comm", hex(c.handle()), "window", hex(w.handle())), only("ncclCommWindowDeregister"));
        assertEquals(List.of("ncclCommWindowDeregister"), newCallNames(), "the buffer is the caller's to free");
        assertTrue(w.isClosed());
        assertFalse(b.isClosed());
    }

    @Test
    void allocateAllocatesRegistersAndClosesInTheRightOrder() {
        Communicator c = comm(1, 4);
        mark();
        Window w = Window.allocate(c, 1000, DataType.FLOAT32);
        assertEquals(List.of("ncclMemAlloc", "ncclCommWindowRegister"), newCallNames());
        assertEquals(Map.of("size", "4000"), only("ncclMemAlloc"));
        long address = w.buffer().address();
        assertEquals(Map.of("comm", hex(c.handle()), "buff", hex(address), "size", "4000", "flags", "1"),
                only("ncclCommWindowRegister"));
        assertTrue(address >= 0xA000_0000L && address < 0xB000_0000L, "ncclMemAlloc's address: " + hex(address));
        assertEquals(4000, w.bytes());
        assertEquals(1000, w.buffer().count(DataType.FLOAT32));
        assertTrue(w.ownsMemory());
        assertTrue(w.toString().endsWith(", 4000 bytes at " + hex(address) + ", rank 1 of 4, owns its memory]"),
                w.toString());
        assertEquals(List.of(), cuda.calls("malloc"), "not cudaMalloc");

        mark();
        w.buffer().slice(0, 4000).close();
        assertEquals(List.of(), newCalls(), "closing a view of the window's memory frees nothing");
        w.close();
        assertEquals(List.of("ncclCommWindowDeregister ncclMemFree"), List.of(String.join(" ", newCallNames())),
                "deregistered, then freed");
        assertEquals(Map.of("comm", hex(c.handle()), "window", hex(w.handle())), only("ncclCommWindowDeregister"));
        assertEquals(Map.of("ptr", hex(address)), only("ncclMemFree"));
        mark();
        w.close();
        assertEquals(List.of(), newCalls(), "idempotent");
        assertTrue(w.buffer().isClosed());
        refused(IllegalStateException.class, () -> w.buffer().address(), "is a slice of", "was closed");
        assertTrue(w.toString().endsWith(", owns its memory, closed]"), w.toString());
    }

    @Test
    void allocateOnAnotherDeviceAllocatesThere() {
        Communicator c = later(Communicator.create(0, 2, testId(), 0));
        Window w = later(Window.allocate(c, 64));
        assertEquals(0, w.buffer().device());
        assertTrue(cuda.calls("setDevice").contains("setDevice device=0"), cuda.calls("setDevice").toString());
    }

    @Test
    void collectivesTakeTheWindowsBufferAndItsSlices() {
        Communicator c = comm(0, 2);
        Stream s = stream(0);
        Window w = later(Window.allocate(c, 256, DataType.FLOAT32));
        mark();
        c.allReduce(w.buffer(), DataType.FLOAT32, ReduceOp.SUM, s);
        Map<String, String> r = only("ncclAllReduce");
        assertEquals(hex(w.buffer().address()), r.get("sendbuff"));
        assertEquals(hex(w.buffer().address()), r.get("recvbuff"));
        assertEquals("256", r.get("count"));
        DeviceBuffer half = w.buffer().slice(512, 512);
        mark();
        c.allGather(half, w.buffer(), DataType.FLOAT32, s);
        r = only("ncclAllGather");
        assertEquals(hex(w.buffer().address() + 512), r.get("sendbuff"));
        assertEquals("128", r.get("count"));
    }

    @Test
    void closingAfterTheCommunicatorDeregistersNothingButStillFrees() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        DeviceBuffer b = ncclBuffer(0, 4096);
        Window registered = c.registerWindow(b);
        Window allocated = Window.allocate(c, 4096);
        long address = allocated.buffer().address();
        c.close();
        mark();
        registered.close();
        assertEquals(List.of(), newCalls(), "NCCL freed the window with the communicator");
        allocated.close();
        assertEquals(List.of("ncclMemFree ptr=" + hex(address)), newCalls());
        allocated.close();
        assertEquals(1, newCalls().size());
    }

    @Test
    void aFailedDeregistrationStillFreesAndIsNotRetried() {
        Communicator c = comm(0, 2);
        Window w = Window.allocate(c, 4096);
        stub.result(NcclFunction.ncclCommWindowDeregister, 5);
        mark();
        NcclException e = assertThrows(NcclException.class, w::close);
        assertEquals("ncclCommWindowDeregister", e.operation());
        assertEquals(NcclResult.INVALID_USAGE, e.result());
        assertEquals(List.of("ncclCommWindowDeregister", "ncclMemFree"), ncclCalls());
        assertTrue(w.isClosed());
        stub.result(NcclFunction.ncclCommWindowDeregister, 0);
        mark();
        w.close();
        assertEquals(List.of(), newCalls(), "not retried");
    }

    @Test
    void aFailedRegistrationFreesWhatAllocateAllocated() {
        Communicator c = comm(0, 2);
        stub.result(NcclFunction.ncclCommWindowRegister, 1);
        mark();
        NcclException e = assertThrows(NcclException.class, () -> Window.allocate(c, 100, DataType.INT32));
        assertEquals("ncclCommWindowRegister", e.operation());
        assertEquals(List.of("ncclMemAlloc", "ncclCommWindowRegister", "ncclMemFree"), ncclCalls());
        // and the fixture finds no DeviceBuffer left open
    }

    // ---------------------------------------------------------------- refused before NCCL

    @Test
    void badBuffersAreRefusedNamingTheFix() {
        Communicator c = comm(0, 2);
        DeviceBuffer plain = buffer(0, 4096, DataType.UINT8);
        DeviceBuffer elsewhere = ncclBuffer(2, 4096);
        DeviceBuffer freed = DeviceBuffer.allocateNccl(0, 4096);
        freed.close();
        DeviceBuffer nccl = ncclBuffer(0, 3 * 4096);
        DeviceBuffer parentClosed = DeviceBuffer.allocateNccl(0, 8192);
        DeviceBuffer orphan = parentClosed.slice(0, 4096);
        parentClosed.close();
        mark();
        refused(NullPointerException.class, () -> c.registerWindow(null), "buffer must not be null");
        refused(IllegalArgumentException.class, () -> c.registerWindow(elsewhere),
                "buffer is on device 2 but this communicator (rank 0) uses device 0", "allocate it on device 0");
        refused(IllegalStateException.class, () -> c.registerWindow(freed), "buffer is closed");
        refused(IllegalStateException.class, () -> c.registerWindow(orphan), "buffer is a slice of",
                "keep the parent open");
        refused(IllegalArgumentException.class, () -> c.registerWindow(plain),
                "buffer was allocated with cudaMalloc (DeviceBuffer.allocate)", "virtual memory",
                "DeviceBuffer.allocateNccl (ncclMemAlloc)", "Window.allocate");
        refused(IllegalArgumentException.class, () -> c.registerWindow(plain.slice(0, 1024)),
                "buffer is a slice of DeviceBuffer[", "CUDA_MALLOC", "which was allocated with cudaMalloc");
        refused(IllegalArgumentException.class, () -> c.registerWindow(nccl.slice(100, 4096)),
                "buffer starts 100 bytes into its ncclMemAlloc allocation",
                "not a multiple of 4096 (NCCL_WIN_REQUIRED_ALIGNMENT)", "starts at a multiple of 4096 bytes");
        assertEquals(List.of(), newCalls(), "nothing reached NCCL");

        later(c.registerWindow(nccl.slice(4096, 8192)));
        assertEquals(Map.of("comm", hex(c.handle()), "buff", hex(nccl.address() + 4096), "size", "8192",
                "flags", "1"), only("ncclCommWindowRegister"));
        mark();
        DeviceBuffer foreign = DeviceBuffer.wrap(0x7f00_0010_0000L, 4096, 0);
        later(c.registerWindow(foreign));
        assertEquals(hex(0x7f00_0010_0000L), only("ncclCommWindowRegister").get("buff"),
                "memory of another library cannot be checked here: NCCL decides");
    }

    @Test
    void badSizesAndNullsAreRefusedBeforeAnythingIsAllocated() {
        Communicator c = comm(0, 2);
        mark();
        refused(IllegalArgumentException.class, () -> Window.allocate(c, 0, DataType.FLOAT32),
                "count must be > 0, got 0");
        refused(IllegalArgumentException.class, () -> Window.allocate(c, -3, DataType.FLOAT32),
                "count must be > 0, got -3");
        refused(IllegalArgumentException.class, () -> Window.allocate(c, 0), "bytes must be > 0, got 0");
        refused(NullPointerException.class, () -> Window.allocate(c, 4, null), "type must not be null");
        refused(NullPointerException.class, () -> Window.allocate(null, 4, DataType.FLOAT32), "comm must not be null");
        refused(NullPointerException.class, () -> Window.allocate(null, 4096), "comm must not be null");
        assertThrows(ArithmeticException.class, () -> Window.allocate(c, Long.MAX_VALUE / 2, DataType.INT32));
        assertEquals(List.of(), newCalls(), "nothing reached NCCL");
        assertEquals(List.of(), cuda.calls("malloc"));
    }

    @Test
    void aClosedCommunicatorIsRefused() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        DeviceBuffer b = ncclBuffer(0, 4096);
        c.close();
        mark();
        refused(IllegalStateException.class, () -> c.registerWindow(b), "Communicator (rank 0 of 2) is closed");
        refused(IllegalStateException.class, () -> Window.allocate(c, 4096), "Communicator (rank 0 of 2) is closed");
        assertEquals(List.of(), newCalls(), "nothing allocated or registered");
    }

    @Test
    void insideAGroupAndOnANonblockingCommunicatorItIsRefused() {
        Communicator c = comm(0, 2);
        DeviceBuffer b = ncclBuffer(0, 4096);
        mark();
        try (Group g = Nccl.group()) {
            refused(IllegalStateException.class, () -> c.registerWindow(b),
                    "Communicator.registerWindow (ncclCommWindowRegister) is not allowed while a group is open",
                    "only at ncclGroupEnd", "Register before the group begins or after it ends");
            refused(IllegalStateException.class, () -> Window.allocate(c, 4096), "while a group is open");
        }
        assertEquals(List.of("ncclGroupStart", "ncclGroupEnd"), newCallNames(), "nothing allocated or registered");
        later(c.registerWindow(b));

        Communicator nb = nonblockingComm(0, 2);
        mark();
        refused(IllegalStateException.class, () -> nb.registerWindow(b), "not allowed on a nonblocking communicator",
                "CommConfig.blocking(true)");
        refused(IllegalStateException.class, () -> Window.allocate(nb, 4096), "nonblocking");
        assertEquals(List.of(), newCalls());
    }

    @Test
    void registeringAndClosingAreRefusedWhileCapturing() {
        Communicator c = comm(0, 1);
        DeviceBuffer b = ncclBuffer(0, 4096);
        Window w = c.registerWindow(b);
        Stream s = stream(0);
        s.beginCapture();
        try {
            mark();
            refused(IllegalStateException.class, () -> c.registerWindow(b), "Communicator.registerWindow");
            refused(IllegalStateException.class, () -> Window.allocate(c, 4096), "Window.allocate");
            refused(IllegalStateException.class, w::close, "Window.close (ncclCommWindowDeregister)");
            assertFalse(w.isClosed(), "nothing was done");
            assertEquals(List.of(), newCalls());
        } finally {
            s.endCapture().close();
        }
        w.close();
        assertTrue(w.isClosed());
    }

    // ---------------------------------------------------------------- GradientBuckets in windows

    @Test
    void gradientBucketsCanLiveInSymmetricWindows() {
        Communicator c = comm(0, 2);
        Stream compute = stream(0);
        mark();
        // 3 and 5 floats under a 20-byte cap: two buckets, of 20 and 12 bytes
        GradientBuckets buckets = GradientBuckets.builder(c).bucketCapMB(20.0 / (1 << 20)).average(false)
                .symmetric(true).add(3).add(5).build();
        assertTrue(buckets.isSymmetric());
        assertEquals(List.of("ncclMemAlloc", "ncclCommWindowRegister", "ncclMemAlloc", "ncclCommWindowRegister"),
                newCallNames(), "one window per bucket, in bucket order on every rank");
        List<String> registered = stub.calls("ncclCommWindowRegister");
        assertTrue(registered.get(0).endsWith(" size=20 flags=1"), registered.get(0));
        assertTrue(registered.get(1).endsWith(" size=12 flags=1"), registered.get(1));
        assertEquals(List.of(), cuda.calls("malloc"), "no cudaMalloc for the buckets");
        long bucket0 = buckets.gradient(1).address();
        assertEquals(hex(bucket0), StubNccl.parse(registered.get(0)).get("buff"));
        mark();
        buckets.ready(1, compute);
        assertEquals(hex(bucket0), only("ncclAllReduce").get("sendbuff"));
        assertEquals("0", only("ncclAllReduce").get("op"), "SUM, which the symmetric kernels take");
        buckets.finish(compute);
        mark();
        buckets.close();
        assertEquals(List.of("ncclCommWindowDeregister", "ncclMemFree", "ncclCommWindowDeregister", "ncclMemFree"),
                newCallNames(), "each bucket deregistered before it is freed");
        buckets.close();
    }

    @Test
    void gradientBucketsStayInCudaMallocMemoryByDefault() {
        Communicator c = comm(0, 2);
        mark();
        GradientBuckets buckets = GradientBuckets.builder(c).build0(3, 5);
        assertFalse(buckets.isSymmetric());
        assertEquals(List.of(), newCalls(), "no NCCL call");
        assertEquals(1, cuda.calls("malloc").size());
        buckets.close();
    }

    // ---------------------------------------------------------------- NCCL 2.27

    @Test
    void onNccl227TheAlignmentOf228IsNotAskedAndZeroIsRefused() {
        stub = StubNccl.reloadFullAs(22705);
        try {
            assertEquals("2.27.5", Nccl.version());
            try (Communicator c = Communicator.create(0, 2, testId(), 0);
                 DeviceBuffer b = DeviceBuffer.allocateNccl(0, 3 * 4096)) {
                try (Window w = c.registerWindow(b.slice(100, 4096))) {
                    assertEquals(hex(b.address() + 100), stub.last("ncclCommWindowRegister").get("buff"),
                            "2.27 registers the whole allocation: any offset");
                }
            }
            CommConfig zero = CommConfig.builder().ctaPolicy(CtaPolicy.ZERO).build();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Communicator.create(0, 2, testId(), 0, zero).close());
            assertEquals("CommConfig CTAPolicy ZERO (NCCL_CTA_POLICY_ZERO, 2) needs NCCL 2.28.3 or newer, but the "
                    + "loaded NCCL is 2.27.5 (" + Nccl.library().path() + "), which refuses it as invalid. Choose "
                    + "another CTA policy, or load a newer NCCL.", e.getMessage());
            try (Communicator c = Communicator.create(0, 2, testId(), 0,
                    CommConfig.builder().ctaPolicy(CtaPolicy.EFFICIENCY).build())) {
                assertEquals("1", stub.last("ncclCommInitRankConfig").get("CTAPolicy"));
            }
        } finally {
            stub = StubNccl.reloadFull();
        }
    }
}
