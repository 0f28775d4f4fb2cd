package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.CollectiveForms.N;
import static org.nccl4j.CollectiveForms.RANK;
import static org.nccl4j.CollectiveForms.SIZE;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nccl4j.CollectiveForms.Args;
import org.nccl4j.CollectiveForms.Form;

/**
 * Argument validation of the idiomatic API, against the full stub NCCL. Every collective in each of its forms
 * is called with valid arguments but one, for every way that argument can be wrong; each case asserts the
 * exception type, the parts of the message that name the argument and say what to do, and that nothing
 * reached NCCL (the stub recorded no call at all). {@link #validArgumentsReachNccl} is the control: the same
 * calls with nothing wrong reach the stub once.
 */
class ValidationTest extends StubFixture {

    /** How one argument is made wrong. */
    interface Mutation {
        void apply(ValidationTest t, Form f, Args a);
    }

    record Case(String name, Predicate<Form> applies, Mutation mutation, Class<? extends RuntimeException> type,
            Function<Form, List<String>> message) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static final List<Case> CASES = new ArrayList<>();

    private static void add(String name, Predicate<Form> applies, Mutation m, Class<? extends RuntimeException> type,
            Function<Form, List<String>> message) {
        CASES.add(new Case(name, applies, m, type, message));
    }

    static {
        Predicate<Form> all = f -> true;
        add("closed communicator", all, (t, f, a) -> a.comm.close(), IllegalStateException.class,
                f -> List.of("Communicator (rank 1 of 4) is closed"));
        add("null type", all, (t, f, a) -> a.type = null, NullPointerException.class,
                f -> List.of("type must not be null"));
        add("null stream", all, (t, f, a) -> a.stream = null, NullPointerException.class,
                f -> List.of("stream must not be null"));
        add("closed stream", all, (t, f, a) -> {
            a.stream = Stream.create(0);
            a.stream.close();
        }, IllegalStateException.class, f -> List.of("stream is closed"));
        add("stream on device 1", all, (t, f, a) -> a.stream = t.stream(1), IllegalArgumentException.class,
                f -> List.of("stream is on device 1", "uses device 0", "use a stream of device 0"));
        for (String role : List.of("send", "recv", "buffer")) {
            add("null " + role, f -> f.takes(role), (t, f, a) -> a.set(role, null), NullPointerException.class,
                    f -> List.of(role + " must not be null"));
            add("closed " + role, f -> f.takes(role), (t, f, a) -> {
                DeviceBuffer b = DeviceBuffer.allocate(0, a.get(role).bytes());
                b.close();
                a.set(role, b);
            }, IllegalStateException.class, f -> List.of(role + " is closed"));
            add(role + " a slice of a closed buffer", f -> f.takes(role), (t, f, a) -> {
                DeviceBuffer parent = DeviceBuffer.allocate(0, a.get(role).bytes() + 16);
                DeviceBuffer slice = parent.slice(16, a.get(role).bytes());
                parent.close();
                a.set(role, slice);
            }, IllegalStateException.class, f -> List.of(role + " is a slice of DeviceBuffer[0x",
                    " bytes, device 0, CUDA_MALLOC, closed], and that parent buffer was closed: its memory may be "
                    + "freed; keep the parent open while its slices are in use"));
            add(role + " on device 1", f -> f.takes(role),
                    (t, f, a) -> a.set(role, t.later(DeviceBuffer.allocate(1, a.get(role).bytes()))),
                    IllegalArgumentException.class,
                    f -> List.of(role + " is on device 1", "uses device 0", "allocate it on device 0"));
        }
        add("send address 0", f -> f.takes("sendAddr"), (t, f, a) -> a.sendAddr = 0, IllegalArgumentException.class,
                f -> List.of("send must not be 0 (NULL)"));
        add("recv address 0", f -> f.takes("recvAddr"), (t, f, a) -> a.recvAddr = 0, IllegalArgumentException.class,
                f -> List.of("recv must not be 0 (NULL)"));
        add("buffer address 0", f -> f.takes("bufferAddr"), (t, f, a) -> a.sendAddr = 0,
                IllegalArgumentException.class, f -> List.of("buffer must not be 0 (NULL)"));
        add("count -1", Form::raw, (t, f, a) -> a.count = -1, IllegalArgumentException.class,
                f -> List.of("count must be >= 0, got -1"));
        add("count Long.MIN_VALUE", Form::raw, (t, f, a) -> a.count = Long.MIN_VALUE, IllegalArgumentException.class,
                f -> List.of("count must be >= 0, got " + Long.MIN_VALUE));
        add("null op", Form::reduces, (t, f, a) -> a.op = null, NullPointerException.class,
                f -> List.of("op must not be null"));
        add("PreMulSum of another communicator", Form::reduces,
                (t, f, a) -> a.op = t.later(t.comm(2, SIZE).createPreMulSum(2.0, DataType.FLOAT32)),
                IllegalArgumentException.class,
                f -> List.of("PreMulSum(host 2.0, FLOAT32) belongs to another communicator (rank 2 of 4)",
                        "create one per communicator"));
        add("PreMulSum of another type", Form::reduces,
                (t, f, a) -> a.op = t.later(a.comm.createPreMulSum(2.0, DataType.FLOAT64)),
                IllegalArgumentException.class,
                f -> List.of("PreMulSum(host 2.0, FLOAT64) was made for FLOAT64 but the collective uses FLOAT32",
                        "create one per data type"));
        add("closed PreMulSum", Form::reduces, (t, f, a) -> {
            ReduceOp.PreMulSum op = a.comm.createPreMulSum(2.0, DataType.FLOAT32);
            op.close();
            a.op = op;
        }, IllegalStateException.class, f -> List.of("PreMulSum(host 2.0, FLOAT32) is closed"));
        for (int bad : new int[] {-1, SIZE, Integer.MIN_VALUE}) {
            add("root/peer " + bad, f -> f.rankRole() != null, (t, f, a) -> a.root = bad,
                    IllegalArgumentException.class,
                    f -> List.of(f.rankRole() + " must be in 0..3 (the communicator has 4 ranks), got " + bad));
        }
        add("buffer too small for the count", f -> f.fitRole() != null,
                (t, f, a) -> a.set(f.fitRole(), t.floats(f.fitNeeded() - 1)), IllegalArgumentException.class,
                f -> List.of(f.fitRole() + " holds " + (f.fitNeeded() - 1) + " elements of FLOAT32 ("
                        + 4 * (f.fitNeeded() - 1) + " bytes) but the operation needs " + f.fitNeeded(),
                        "use a larger buffer or a smaller count"));
        add("count buffer of 10 bytes for FLOAT32", f -> f.countRole() != null,
                (t, f, a) -> a.set(f.countRole(), t.later(DeviceBuffer.allocate(0, 10))),
                IllegalArgumentException.class,
                f -> List.of(f.countRole() + " holds 10 bytes, not a multiple of the 4-byte size of FLOAT32 (its "
                        + "element count would be truncated): use a buffer whose size is a multiple of 4 bytes, a "
                        + "slice of whole elements (slice(0, 8) holds 2), or the overload that takes device addresses "
                        + "and an explicit count"));
        add("length not a multiple of the ranks", f -> f.perRankRole() != null,
                (t, f, a) -> a.set(f.perRankRole(), t.floats((long) SIZE * N + 2)), IllegalArgumentException.class,
                f -> List.of(f.perRankRole() + " holds 34 elements of FLOAT32, not a multiple of the 4 ranks"));
    }

    static java.util.stream.Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (Form f : CollectiveForms.all()) {
            for (Case c : CASES) {
                if (c.applies().test(f)) {
                    out.add(Arguments.of(f, c));
                }
            }
        }
        return out.stream();
    }

    DeviceBuffer floats(long count) {
        return buffer(0, count, DataType.FLOAT32);
    }

    /** Valid arguments for {@code f}. */
    Args valid(Form f) {
        Args a = new Args();
        a.comm = comm(RANK, SIZE);
        a.stream = stream(0);
        f.setup().accept(this::floats, a);
        return a;
    }

    private void assertRejected(Class<? extends RuntimeException> type, Executable call, List<String> parts) {
        mark();
        RuntimeException e = assertThrows(type, call);
        for (String p : parts) {
            assertTrue(e.getMessage() != null && e.getMessage().contains(p),
                    "message should contain \"" + p + "\": " + e.getMessage());
        }
        assertEquals(List.of(), newCalls(), "nothing may reach NCCL");
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void invalidArgumentIsRejectedBeforeNccl(Form f, Case c) {
        Args a = valid(f);
        c.mutation().apply(this, f, a);
        long before = a.comm.operationsEnqueued();
        assertRejected(c.type(), () -> f.call().run(a), c.message().apply(f));
        assertEquals(before, a.comm.operationsEnqueued(), "a rejected call is not counted");
    }

    @Test
    void everyFormHasItsCases() {
        // 5 for all forms, 4 per DeviceBuffer taken, 1 per address, 2 counts, 4 for reductions, 3 for root/peer,
        // 1 per buffer that gives the count, is checked against a count, or must be a multiple of the ranks
        assertEquals(27, CollectiveForms.all().size());
        assertEquals(17, CollectiveForms.all().stream().filter(f -> f.countRole() != null).count(),
                "every DeviceBuffer form derives its count from a buffer");
        long cases = cases().count();
        long expected = 0;
        for (Form f : CollectiveForms.all()) {
            expected += 5;
            for (String r : List.of("send", "recv", "buffer")) {
                expected += f.takes(r) ? 4 : 0;
            }
            for (String r : List.of("sendAddr", "recvAddr", "bufferAddr")) {
                expected += f.takes(r) ? 1 : 0;
            }
            expected += f.raw() ? 2 : 0;
            expected += f.reduces() ? 4 : 0;
            expected += f.rankRole() != null ? 3 : 0;
            expected += f.fitRole() != null ? 1 : 0;
            expected += f.perRankRole() != null ? 1 : 0;
            expected += f.countRole() != null ? 1 : 0;
        }
        assertEquals(expected, cases);
        assertTrue(cases > 250, "cases: " + cases);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("org.nccl4j.CollectiveForms#all")
    void validArgumentsReachNccl(Form f) {
        Args a = valid(f);
        mark();
        f.call().run(a);
        assertEquals(List.of(f.fn()), newCallNames(), "exactly one call, of " + f.fn());
        assertEquals(1, a.comm.operationsEnqueued());
    }

    @Test
    void onlyTheBufferThatGivesTheCountMustHoldWholeElements() {
        // the control of the 10-byte case: the same 10 bytes are 5 whole FLOAT16 elements, and NCCL gets 5; a
        // buffer only checked against a count derived from another may be larger and end in a partial element
        Communicator c = comm(RANK, SIZE);
        Stream s = stream(0);
        DeviceBuffer ten = later(DeviceBuffer.allocate(0, 10));
        mark();
        c.allReduce(ten, DataType.FLOAT16, ReduceOp.SUM, s);
        assertEquals("5", only("ncclAllReduce").get("count"));
        DeviceBuffer send = floats(N);
        DeviceBuffer recv = later(DeviceBuffer.allocate(0, 4 * N + 3));
        mark();
        c.allReduce(send, recv, DataType.FLOAT32, ReduceOp.SUM, s);
        assertEquals(Integer.toString(N), only("ncclAllReduce").get("count"));
        mark();
        assertRejected(IllegalArgumentException.class,
                () -> c.allReduce(recv, send, DataType.FLOAT32, ReduceOp.SUM, s),
                List.of("send holds 35 bytes, not a multiple of the 4-byte size of FLOAT32", "slice(0, 32) holds 8"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("org.nccl4j.CollectiveForms#all")
    void fp8ReachesNccl224(Form f) {
        // the control of the fp8 check made on the old stub (OldNcclTest): 2.28.3 takes FLOAT8_E4M3
        Args a = valid(f);
        a.type = DataType.FLOAT8_E4M3;
        a.op = ReduceOp.MAX;
        mark();
        f.call().run(a);
        assertEquals("10", only(f.fn()).get("datatype"));
    }

    // ---------------------------------------------------------------- creation

    @Test
    void createChecksRankSizeIdAndDevice() {
        UniqueId id = testId();
        cuda.clearCalls();
        assertRejected(IllegalArgumentException.class, () -> Communicator.create(0, 0, id, 0),
                List.of("size must be >= 1, got 0"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.create(0, -3, id, 0),
                List.of("size must be >= 1, got -3"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.create(-1, 4, id, 0),
                List.of("rank must be in 0..3 for size 4, got -1"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.create(4, 4, id, 0),
                List.of("rank must be in 0..3 for size 4, got 4"));
        assertRejected(NullPointerException.class, () -> Communicator.create(0, 4, null, 0),
                List.of("id must not be null"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.create(0, 4, id, -1),
                List.of("device must be >= 0, got -1"));
        assertRejected(IllegalArgumentException.class,
                () -> Communicator.create(0, 4, id, -1, CommConfig.DEFAULT), List.of("device must be >= 0, got -1"));
        assertEquals(List.of(), cuda.calls("setDevice"), "rejected before CUDA, too");
    }

    @Test
    void createOnADeviceCudaRejectsReachesNoNccl() {
        // FakeCuda has 4 devices: cudaSetDevice(7) fails with cudaErrorInvalidDevice
        CudaException e = assertThrows(CudaException.class, () -> Communicator.create(0, 2, testId(), 7));
        assertEquals("cudaSetDevice failed on device 7: cudaErrorInvalidDevice (101): invalid device ordinal",
                e.getMessage());
        assertEquals(101, e.code());
        assertEquals("cudaSetDevice", e.operation());
        assertEquals(7, e.device());
        assertEquals(List.of(), stub.calls("ncclCommInitRank"));
    }

    @Test
    void initAllChecksDevices() {
        assertRejected(IllegalArgumentException.class, () -> Communicator.initAll((int[]) null),
                List.of("devices must name at least one CUDA device"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.initAll(),
                List.of("devices must name at least one CUDA device"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.initAll(0, -1),
                List.of("devices[1] must be >= 0, got -1"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.initAll(0, 1, 2, 1),
                List.of("devices must be distinct: device 1 appears twice"));
        assertRejected(IllegalArgumentException.class, () -> Communicator.initAll(3, 3),
                List.of("devices must be distinct: device 3 appears twice"));
    }

    @Test
    void uniqueIdOfChecksItsBytes() {
        assertRejected(NullPointerException.class, () -> UniqueId.of(null), List.of("bytes must not be null"));
        assertRejected(IllegalArgumentException.class, () -> UniqueId.of(new byte[127]),
                List.of("an ncclUniqueId has 128 bytes, got 127"));
        assertRejected(IllegalArgumentException.class, () -> UniqueId.of(new byte[129]),
                List.of("an ncclUniqueId has 128 bytes, got 129"));
    }

    // ---------------------------------------------------------------- other communicator methods

    @Test
    void splitChecksColorAndState() {
        Communicator c = comm(1, 4);
        assertRejected(IllegalArgumentException.class, () -> c.split(-2, 0),
                List.of("color must be >= 0 or NO_COLOR (-1), got -2"));
        assertRejected(IllegalArgumentException.class, () -> c.split(Integer.MIN_VALUE, 0, CommConfig.DEFAULT),
                List.of("color must be >= 0 or NO_COLOR (-1), got " + Integer.MIN_VALUE));
        c.close();
        assertRejected(IllegalStateException.class, () -> c.split(0, 0),
                List.of("Communicator (rank 1 of 4) is closed"));
    }

    @Test
    void hostPreMulSumChecksTypeAndState() {
        Communicator c = comm(1, 4);
        assertRejected(NullPointerException.class, () -> c.createPreMulSum(2.0, null),
                List.of("type must not be null"));
        assertRejected(UnsupportedOperationException.class, () -> c.createPreMulSum(2.0, DataType.FLOAT8_E4M3),
                List.of("a host scalar of type FLOAT8_E4M3 is not supported", "pass the scalar in a DeviceBuffer"));
        assertRejected(UnsupportedOperationException.class, () -> c.createPreMulSum(2.0, DataType.FLOAT8_E5M2),
                List.of("a host scalar of type FLOAT8_E5M2 is not supported"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(0.5, DataType.INT32),
                List.of("scalar 0.5 cannot be held exactly by INT32", "truncated to 0", "pass a whole number in "
                        + "-2147483648..2147483647, or use a floating type"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(Double.NaN, DataType.INT64),
                List.of("scalar NaN cannot be held exactly by INT64", "pass a whole number"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(300, DataType.UINT8),
                List.of("scalar 300 cannot be held exactly by UINT8", "outside UINT8's range", "0..255"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(-2, DataType.UINT32),
                List.of("scalar -2 cannot be held exactly by UINT32", "unsigned", "or use a signed type"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(1e6, DataType.FLOAT16),
                List.of("scalar 1000000 overflows FLOAT16", "largest finite value is 65504", "or use FLOAT32"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(1e39, DataType.FLOAT32),
                List.of("scalar 1.0E39 overflows FLOAT32", "or use FLOAT64"));
        c.close();
        assertRejected(IllegalStateException.class, () -> c.createPreMulSum(2.0, DataType.FLOAT32),
                List.of("Communicator (rank 1 of 4) is closed"));
    }

    @Test
    void deviceScalarPreMulSumChecksTheScalarBuffer() {
        Communicator c = comm(1, 4);
        DeviceBuffer four = buffer(0, 1, DataType.FLOAT32);
        assertRejected(NullPointerException.class, () -> c.createPreMulSum(null, DataType.FLOAT32),
                List.of("scalar must not be null"));
        assertRejected(NullPointerException.class, () -> c.createPreMulSum(four, null),
                List.of("type must not be null"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(four, DataType.FLOAT64),
                List.of("scalar holds 4 bytes, less than one FLOAT64"));
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(four.slice(0, 2), DataType.INT32),
                List.of("scalar holds 2 bytes, less than one INT32"));
        DeviceBuffer other = buffer(2, 1, DataType.FLOAT32);
        assertRejected(IllegalArgumentException.class, () -> c.createPreMulSum(other, DataType.FLOAT32),
                List.of("scalar is on device 2", "allocate it on device 0"));
        DeviceBuffer closed = DeviceBuffer.allocate(0, 4);
        closed.close();
        assertRejected(IllegalStateException.class, () -> c.createPreMulSum(closed, DataType.FLOAT32),
                List.of("scalar is closed"));
        c.close();
        assertRejected(IllegalStateException.class, () -> c.createPreMulSum(four, DataType.FLOAT32),
                List.of("Communicator (rank 1 of 4) is closed"));
    }

    @Test
    void registerChecksTheBuffer() {
        Communicator c = comm(0, 2);
        assertRejected(NullPointerException.class, () -> c.register(null), List.of("buffer must not be null"));
        DeviceBuffer other = buffer(3, 16, DataType.UINT8);
        assertRejected(IllegalArgumentException.class, () -> c.register(other),
                List.of("buffer is on device 3 but this communicator (rank 0) uses device 0", "allocate it on device 0"));
        DeviceBuffer closed = DeviceBuffer.allocate(0, 16);
        closed.close();
        assertRejected(IllegalStateException.class, () -> c.register(closed), List.of("buffer is closed"));
        DeviceBuffer ok = buffer(0, 16, DataType.UINT8);
        c.close();
        assertRejected(IllegalStateException.class, () -> c.register(ok),
                List.of("Communicator (rank 0 of 2) is closed"));
    }

    @Test
    void queriesOfAClosedCommunicatorThrowButItsFactsRemain() {
        Communicator c = comm(3, 4);
        long h = c.handle();
        assertTrue(h != 0);
        c.close();
        assertRejected(IllegalStateException.class, c::handle, List.of("Communicator (rank 3 of 4) is closed"));
        assertRejected(IllegalStateException.class, c::asyncError, List.of("is closed"));
        assertRejected(IllegalStateException.class, c::checkAsyncError, List.of("is closed"));
        assertEquals(3, c.rank());
        assertEquals(4, c.size());
        assertEquals(0, c.device());
        assertTrue(c.isClosed());
        assertEquals("Communicator[rank 3 of 4, device 0, closed]", c.toString());
    }

    @Test
    void deviceBufferAndStreamFactoriesCheckTheirArguments() {
        cuda.clearCalls();
        assertRejected(IllegalArgumentException.class, () -> DeviceBuffer.allocate(-1, 8),
                List.of("device must be >= 0, got -1"));
        assertRejected(IllegalArgumentException.class, () -> DeviceBuffer.allocate(0, 0),
                List.of("bytes must be > 0, got 0"));
        assertRejected(IllegalArgumentException.class, () -> DeviceBuffer.allocate(0, -8, DataType.FLOAT64),
                List.of("bytes must be > 0, got -64"));
        assertRejected(IllegalArgumentException.class, () -> DeviceBuffer.allocate(0, 8, null),
                List.of("type must not be null"));
        assertRejected(ArithmeticException.class, () -> DeviceBuffer.allocate(0, Long.MAX_VALUE / 2, DataType.INT32),
                List.of());
        assertRejected(IllegalArgumentException.class, () -> DeviceBuffer.allocateNccl(0, 0),
                List.of("bytes must be > 0, got 0"));
        assertRejected(IllegalArgumentException.class, () -> DeviceBuffer.wrap(0, 8, 0),
                List.of("address must not be 0 (NULL)"));
        assertRejected(IllegalArgumentException.class, () -> DeviceBuffer.wrap(0x1000, 8, -2),
                List.of("device must be >= 0, got -2"));
        assertRejected(IllegalArgumentException.class, () -> Stream.create(-1), List.of("device must be >= 0, got -1"));
        assertRejected(IllegalArgumentException.class, () -> Stream.wrap(0x10, -1), List.of("device must be >= 0"));
        assertRejected(IllegalArgumentException.class, () -> Event.create(-1), List.of("device must be >= 0, got -1"));
        assertEquals(List.of(), cuda.calls(), "nothing reached CUDA");
    }
}
