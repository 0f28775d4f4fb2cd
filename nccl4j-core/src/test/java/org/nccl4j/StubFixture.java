package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.nccl4j.jni.StubNccl;

/**
 * What the CPU tests of the core API share: the stub NCCL loaded and its record emptied, {@link FakeCuda} with
 * four devices installed, helpers to make communicators, buffers and streams that are closed after the test,
 * and a check that the test left no nccl4j resource open ({@link Nccl#openResources()} gained nothing).
 *
 * <p>Communicators made here get their rank and size from the stub (it remembers what ncclCommInitRank was
 * given) and device 0 (the stub reports device 0 for every ncclCommInitRank communicator).
 */
public abstract class StubFixture {
    public static final int DEVICES = 4;
    /**
     * Every end of the process that {@link LeftBehindExit} asked for in this JVM ({@code status line}): recorded, not
     * done, so that a test of it cannot halt the test JVM.
     */
    static final List<String> ENDINGS = new java.util.concurrent.CopyOnWriteArrayList<>();

    static {
        LeftBehindExit.ending = (status, line) -> ENDINGS.add(status + " " + line);
    }

    protected StubNccl stub;
    protected FakeCuda cuda;
    private final Deque<AutoCloseable> toClose = new ArrayDeque<>();
    private List<String> openBefore;
    private int mark;

    /** The stub library this class runs against (the full 2.28.3 one unless overridden). */
    protected Path stubLibrary() {
        return StubNccl.full();
    }

    @BeforeEach
    protected final void setUpStubAndFakeCuda() {
        stub = StubNccl.use(stubLibrary());
        cuda = FakeCuda.install(DEVICES);
        openBefore = Nccl.openResources();
    }

    @AfterEach
    protected final void tearDownStubAndFakeCuda() throws Exception {
        try {
            stub = StubNccl.fresh(); // no programmed failure while closing
            Exception first = null;
            while (!toClose.isEmpty()) {
                try {
                    toClose.pop().close();
                } catch (Exception e) {
                    if (first == null) {
                        first = e;
                    }
                }
            }
            if (first != null) {
                throw first;
            }
            List<String> added = new ArrayList<>(Nccl.openResources());
            for (String s : openBefore) {
                added.remove(s);
            }
            assertEquals(List.of(), added, "the test left these nccl4j resources open");
        } finally {
            FakeCuda.uninstall();
            if (!stubLibrary().equals(StubNccl.full())) {
                StubNccl.useFull();
            }
        }
    }

    /**
     * A TCP port free at the moment of the call (the kernel's pick), for a test's rank 0.
     *
     * @return the port
     * @throws java.io.IOException when no socket can be opened
     */
    public static int freePort() throws java.io.IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * Polls {@code probe} every 10 ms until it returns non-null, and returns that.
     *
     * @throws AssertionError naming {@code what} when {@code millis} pass first
     */
    public static <T> T within(long millis, java.util.function.Supplier<T> probe, String what) {
        long end = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(millis);
        while (System.nanoTime() < end) {
            T v = probe.get();
            if (v != null) {
                return v;
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
        throw new AssertionError(what + " did not happen within " + millis + " ms");
    }

    /**
     * The liveness channel {@code l} now serves {@code c}, as {@code fromEnvironment} attaches it: for the tests of
     * {@code org.nccl4j.control}, which cannot reach the communicator's package-private state.
     */
    public static void attachChannel(Communicator c, org.nccl4j.control.Liveness l) {
        c.health().attachChannel(l);
    }

    /** Closes {@code c} after the test (in reverse order of registration). */
    protected <T extends AutoCloseable> T later(T c) {
        toClose.push(c);
        return c;
    }

    /** An id whose bytes are 0, 1, 2, ... (no NCCL call). */
    public static UniqueId testId() {
        byte[] b = new byte[UniqueId.BYTES];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 3 + 11);
        }
        return UniqueId.of(b);
    }

    /** Rank {@code rank} of a {@code size}-rank communicator on device 0, closed after the test. */
    protected Communicator comm(int rank, int size) {
        return later(Communicator.create(rank, size, testId(), 0));
    }

    /** A nonblocking communicator. */
    protected Communicator nonblockingComm(int rank, int size) {
        return later(Communicator.create(rank, size, testId(), 0, CommConfig.builder().blocking(false).build()));
    }

    /** A buffer of {@code count} elements of {@code type} on {@code device}, closed after the test. */
    protected DeviceBuffer buffer(int device, long count, DataType type) {
        return later(DeviceBuffer.allocate(device, count, type));
    }

    protected Stream stream(int device) {
        return later(Stream.create(device));
    }

    /** Starts counting the stub's record from here: {@link #newCalls()} returns what came after. */
    protected void mark() {
        mark = stub.calls().size();
    }

    /** The stub's record since {@link #mark()}. */
    protected List<String> newCalls() {
        List<String> all = stub.calls();
        return new ArrayList<>(all.subList(Math.min(mark, all.size()), all.size()));
    }

    /** The function names of the stub's record since {@link #mark()}. */
    protected List<String> newCallNames() {
        List<String> names = new ArrayList<>();
        for (String c : newCalls()) {
            names.add(c.split(" ", 2)[0]);
        }
        return names;
    }

    /** The arguments of the only call of {@code fn} since {@link #mark()}. */
    protected Map<String, String> only(String fn) {
        List<String> c = new ArrayList<>();
        for (String line : newCalls()) {
            if (line.startsWith(fn + " ") || line.equals(fn)) {
                c.add(line);
            }
        }
        assertEquals(1, c.size(), "calls of " + fn + " since the mark: " + newCalls());
        return StubNccl.parse(c.get(0));
    }

    public static String hex(long v) {
        return StubNccl.hex(v);
    }
}
