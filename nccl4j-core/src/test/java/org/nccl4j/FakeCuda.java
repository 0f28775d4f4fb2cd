package org.nccl4j;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.bytedeco.javacpp.BytePointer;

/**
 * A CUDA runtime for CPU tests, installed with {@link #install(int)} in place of the JavaCPP presets
 * ({@link CudaCalls#useBackend}). Device memory is a map of Java arrays at made-up device addresses (one address
 * range per device); host memory, which nccl4j hands over as the address of a JavaCPP pointer, is read and
 * written for real. Streams and events are counters. Every call is recorded ({@link #calls(String)}), and any
 * call can be made to fail with a chosen {@code cudaError_t} ({@link #fail(String, int)}).
 *
 * <p>The names of the calls are those of {@link CudaBackend}'s methods: {@code malloc}, {@code free},
 * {@code memcpy}, {@code memset}, {@code setDevice}, {@code getDevice}, {@code streamCreate}, ...
 */
public final class FakeCuda implements CudaBackend {
    /** Device d's memory starts at BASE + d * STRIDE. */
    static final long BASE = 0x7e00_0000_0000L;
    static final long STRIDE = 0x10_0000_0000L;
    /** Streams and events are numbered from these. */
    static final long STREAM_BASE = 0x5700_0000L;
    static final long EVENT_BASE = 0xe700_0000L;

    static final int INVALID_VALUE = 1;
    static final int MEMORY_ALLOCATION = 2;
    static final int INVALID_DEVICE = 101;
    static final int INVALID_HANDLE = 400;
    /** cudaErrorStreamCaptureUnsupported. */
    static final int CAPTURE_UNSUPPORTED = 900;

    private static final Map<Integer, String[]> ERRORS = Map.of(
            0, new String[] {"cudaSuccess", "no error"},
            INVALID_VALUE, new String[] {"cudaErrorInvalidValue", "invalid argument"},
            MEMORY_ALLOCATION, new String[] {"cudaErrorMemoryAllocation", "out of memory"},
            INVALID_DEVICE, new String[] {"cudaErrorInvalidDevice", "invalid device ordinal"},
            INVALID_HANDLE, new String[] {"cudaErrorInvalidResourceHandle", "invalid resource handle"});

    /** One allocation of fake device memory. */
    static final class Allocation {
        final long address;
        final int device;
        final byte[] data;

        Allocation(long address, int device, byte[] data) {
            this.address = address;
            this.device = device;
            this.data = data;
        }
    }

    /** A JavaCPP pointer at a raw host address, owning nothing: how the fake reads and writes host memory. */
    private static final class HostMemory extends BytePointer {
        HostMemory(long address, long bytes) {
            this.address = address;
            this.limit = bytes;
            this.capacity = bytes;
        }
    }

    private final int deviceCount;
    private int current;
    private final long[] nextAddress;
    private final TreeMap<Long, Allocation> memory = new TreeMap<>();
    private final Map<Long, Integer> streams = new HashMap<>();
    private final Map<Long, Integer> events = new HashMap<>();
    private final Map<Long, Integer> capturing = new HashMap<>();
    private final Map<String, Integer> failures = new HashMap<>();
    private final List<String> calls = new ArrayList<>();
    private final java.util.Set<Long> graphs = new java.util.HashSet<>();
    private boolean invalidateCaptures;
    private long streamCounter;
    private long eventCounter;
    /** Streams whose work does not complete until released: synchronize waits, events recorded there stay pending. */
    private final java.util.Set<Long> stalled = new java.util.HashSet<>();
    /** Events recorded on a stalled stream, with that stream. */
    private final Map<Long, Long> pending = new HashMap<>();
    private boolean errorNames = true;
    private float elapsedMs = 1.25f;

    private FakeCuda(int deviceCount) {
        this.deviceCount = deviceCount;
        this.nextAddress = new long[deviceCount];
        for (int d = 0; d < deviceCount; d++) {
            nextAddress[d] = BASE + d * STRIDE + 0x1000;
        }
    }

    /**
     * Makes a fake with {@code devices} devices and installs it as nccl4j's CUDA runtime (public for the tests of the
     * sub-packages, whose child JVMs install one).
     */
    public static FakeCuda install(int devices) {
        FakeCuda f = new FakeCuda(devices);
        CudaCalls.useBackend(f);
        return f;
    }

    /** Puts the real CUDA runtime back (loaded on next use). */
    static void uninstall() {
        CudaCalls.useBackend(null);
    }

    // ---------------------------------------------------------------- programming and inspection

    /** Makes every later call named {@code call} return {@code status} (0 clears it). */
    FakeCuda fail(String call, int status) {
        if (status == 0) {
            failures.remove(call);
        } else {
            failures.put(call, status);
        }
        return this;
    }

    /** Sets what {@code streamIsCapturing} reports for {@code stream} (0 none, 1 active, 2 invalidated). */
    FakeCuda capturing(long stream, int status) {
        capturing.put(stream, status);
        return this;
    }

    /** Whether errorName/errorString know their codes (false: they return null, as a broken runtime might). */
    FakeCuda errorNames(boolean known) {
        errorNames = known;
        return this;
    }

    /** When true, streamEndCapture succeeds but returns no graph, as CUDA does for an invalidated capture. */
    synchronized FakeCuda invalidateCaptures(boolean invalidate) {
        invalidateCaptures = invalidate;
        return this;
    }

    /** @return how many captured graphs exist (made by streamEndCapture, not yet destroyed) */
    synchronized int liveGraphs() {
        return graphs.size();
    }

    FakeCuda elapsedMs(float ms) {
        elapsedMs = ms;
        return this;
    }

    /** Every call, in order, as "name arg=value ...". */
    synchronized List<String> calls() {
        return new ArrayList<>(calls);
    }

    /** The calls named {@code name}. */
    synchronized List<String> calls(String name) {
        return calls.stream().filter(c -> c.equals(name) || c.startsWith(name + " ")).collect(Collectors.toList());
    }

    synchronized void clearCalls() {
        calls.clear();
    }

    /** The current device of the (single) thread the tests run on. */
    synchronized int current() {
        return current;
    }

    /** The allocation starting at {@code address}, or null. */
    synchronized Allocation allocation(long address) {
        return memory.get(address);
    }

    /** How many allocations are live. */
    synchronized int liveAllocations() {
        return memory.size();
    }

    /** How many streams / events are live. */
    synchronized int liveStreams() {
        return streams.size();
    }

    synchronized int liveEvents() {
        return events.size();
    }

    /** Reads {@code n} bytes of device memory at {@code address}. */
    synchronized byte[] read(long address, int n) {
        Allocation a = containing(address, n);
        if (a == null) {
            throw new AssertionError("no fake device memory at 0x" + Long.toHexString(address) + " (" + n + " bytes)");
        }
        byte[] out = new byte[n];
        System.arraycopy(a.data, (int) (address - a.address), out, 0, n);
        return out;
    }

    /** Writes bytes straight into device memory. */
    synchronized void write(long address, byte[] bytes) {
        Allocation a = containing(address, bytes.length);
        if (a == null) {
            throw new AssertionError("no fake device memory at 0x" + Long.toHexString(address));
        }
        System.arraycopy(bytes, 0, a.data, (int) (address - a.address), bytes.length);
    }

    private Allocation containing(long address, long n) {
        Map.Entry<Long, Allocation> e = memory.floorEntry(address);
        if (e == null) {
            return null;
        }
        Allocation a = e.getValue();
        long off = address - a.address;
        return off >= 0 && n >= 0 && off + n <= a.data.length ? a : null;
    }

    /** Arguments recorded in hex, as addresses and handles. */
    private static final java.util.Set<String> HEX_KEYS = java.util.Set.of("address", "dst", "src", "stream", "event",
            "start", "end");

    private int record(String name, Object... kv) {
        StringBuilder sb = new StringBuilder(name);
        for (int i = 0; i + 1 < kv.length; i += 2) {
            Object v = kv[i + 1];
            boolean address = HEX_KEYS.contains(kv[i]);
            sb.append(' ').append(kv[i]).append('=')
                    .append(address ? "0x" + Long.toHexString((Long) v) : String.valueOf(v));
        }
        calls.add(sb.toString());
        return failures.getOrDefault(name, 0);
    }

    /** Parses "name k=v ..." into its pairs. */
    static Map<String, String> args(String call) {
        Map<String, String> m = new LinkedHashMap<>();
        String[] parts = call.split(" ");
        for (int i = 1; i < parts.length; i++) {
            String[] kv = parts[i].split("=", 2);
            m.put(kv[0], kv.length > 1 ? kv[1] : "");
        }
        return m;
    }

    // ---------------------------------------------------------------- CudaBackend

    @Override
    public synchronized int getDeviceCount(int[] count) {
        String delay = System.getenv("FAKE_CUDA_COUNT_DELAY_MS");   // a child JVM held here (StartupDeparturesTest)
        if (delay != null) {
            try {
                Thread.sleep(Long.parseLong(delay));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        int rc = record("getDeviceCount");
        if (rc == 0) {
            count[0] = deviceCount;
        }
        return rc;
    }

    @Override
    public synchronized int setDevice(int device) {
        int rc = record("setDevice", "device", device);
        if (rc != 0) {
            return rc;
        }
        if (device < 0 || device >= deviceCount) {
            return INVALID_DEVICE;
        }
        current = device;
        return 0;
    }

    @Override
    public synchronized int getDevice(int[] device) {
        int rc = record("getDevice");
        if (rc == 0) {
            device[0] = current;
        }
        return rc;
    }

    @Override
    public synchronized int malloc(long[] address, long bytes) {
        int rc = record("malloc", "device", current, "bytes", bytes);
        if (rc != 0) {
            address[0] = 0;
            return rc;
        }
        if (bytes <= 0 || bytes > 1 << 26) {
            return MEMORY_ALLOCATION;
        }
        long a = nextAddress[current];
        nextAddress[current] += (bytes + 0xfff) & ~0xfffL; // 4 KiB apart, so overruns show as missing memory
        memory.put(a, new Allocation(a, current, new byte[(int) bytes]));
        address[0] = a;
        return 0;
    }

    @Override
    public synchronized int free(long address) {
        int rc = record("free", "address", address, "device", current);
        if (rc != 0) {
            return rc;
        }
        return memory.remove(address) != null ? 0 : INVALID_VALUE;
    }

    @Override
    public synchronized int memcpy(long dst, long src, long bytes, int kind) {
        int rc = record("memcpy", "dst", dst, "src", src, "bytes", bytes, "kind", kind);
        if (rc != 0) {
            return rc;
        }
        if (bytes == 0) {
            return 0;
        }
        switch (kind) {
            case 1: { // host to device
                Allocation d = containing(dst, bytes);
                if (d == null || src == 0) {
                    return INVALID_VALUE;
                }
                new HostMemory(src, bytes).get(d.data, (int) (dst - d.address), (int) bytes);
                return 0;
            }
            case 2: { // device to host
                Allocation s = containing(src, bytes);
                if (s == null || dst == 0) {
                    return INVALID_VALUE;
                }
                new HostMemory(dst, bytes).put(s.data, (int) (src - s.address), (int) bytes);
                return 0;
            }
            case 3: { // device to device
                Allocation s = containing(src, bytes);
                Allocation d = containing(dst, bytes);
                if (s == null || d == null) {
                    return INVALID_VALUE;
                }
                System.arraycopy(s.data, (int) (src - s.address), d.data, (int) (dst - d.address), (int) bytes);
                return 0;
            }
            default:
                return INVALID_VALUE;
        }
    }

    @Override
    public synchronized int memset(long address, int value, long bytes) {
        int rc = record("memset", "address", address, "value", value, "bytes", bytes, "device", current);
        if (rc != 0) {
            return rc;
        }
        Allocation a = containing(address, bytes);
        if (a == null || a.device != current) {
            return INVALID_VALUE; // cudaMemset needs the memory's device to be current
        }
        int off = (int) (address - a.address);
        java.util.Arrays.fill(a.data, off, off + (int) bytes, (byte) value);
        return 0;
    }

    @Override
    public synchronized int streamCreate(long[] stream, int flags) {
        int rc = record("streamCreate", "device", current, "flags", flags);
        if (rc == 0) {
            stream[0] = STREAM_BASE + 0x10 * ++streamCounter;
            streams.put(stream[0], current);
        }
        return rc;
    }

    @Override
    public synchronized int streamDestroy(long stream) {
        int rc = record("streamDestroy", "stream", stream);
        if (rc != 0) {
            return rc;
        }
        return streams.remove(stream) != null ? 0 : INVALID_HANDLE;
    }

    @Override
    public synchronized int streamSynchronize(long stream) {
        int rc = record("streamSynchronize", "stream", stream);
        while (stalled.contains(stream)) {
            try {
                wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 999; // cudaErrorUnknown: the test was interrupted
            }
        }
        return rc != 0 ? rc : capturing.getOrDefault(stream, 0) == 1 ? CAPTURE_UNSUPPORTED : 0;
    }

    @Override
    public synchronized int streamIsCapturing(long stream, int[] status) {
        int rc = record("streamIsCapturing", "stream", stream);
        if (rc == 0) {
            status[0] = capturing.getOrDefault(stream, 0);
        }
        return rc;
    }

    private long graphCounter;

    @Override
    public synchronized int streamBeginCapture(long stream, int mode) {
        int rc = record("streamBeginCapture", "stream", stream, "mode", mode);
        if (rc == 0) {
            if (capturing.getOrDefault(stream, 0) == 1) {
                return CAPTURE_UNSUPPORTED;
            }
            capturing.put(stream, 1);
        }
        return rc;
    }

    @Override
    public synchronized int streamEndCapture(long stream, long[] graph) {
        int rc = record("streamEndCapture", "stream", stream);
        Integer state = capturing.remove(stream);
        graph[0] = 0;
        if (rc == 0 && state != null && state == 1 && !invalidateCaptures) {
            graph[0] = 0x6000_0000L + 0x10 * ++graphCounter;
            graphs.add(graph[0]);
        }
        return rc;
    }

    @Override
    public synchronized int graphInstantiate(long[] exec, long graph) {
        int rc = record("graphInstantiate", "graph", graph);
        if (rc == 0) {
            exec[0] = graph + 0x1000_0000L;
        }
        return rc;
    }

    @Override
    public synchronized int graphLaunch(long exec, long stream) {
        return record("graphLaunch", "exec", exec, "stream", stream);
    }

    @Override
    public synchronized int graphExecDestroy(long exec) {
        return record("graphExecDestroy", "exec", exec);
    }

    @Override
    public synchronized int graphDestroy(long graph) {
        graphs.remove(graph);
        return record("graphDestroy", "graph", graph);
    }

    @Override
    public synchronized int eventCreate(long[] event, int flags) {
        int rc = record("eventCreate", "device", current, "flags", flags);
        if (rc == 0) {
            event[0] = EVENT_BASE + 0x10 * ++eventCounter;
            events.put(event[0], current);
        }
        return rc;
    }

    @Override
    public synchronized int eventDestroy(long event) {
        int rc = record("eventDestroy", "event", event);
        if (rc != 0) {
            return rc;
        }
        return events.remove(event) != null ? 0 : INVALID_HANDLE;
    }

    @Override
    public synchronized int eventRecord(long event, long stream) {
        int rc = record("eventRecord", "event", event, "stream", stream);
        if (rc == 0 && stalled.contains(stream)) {
            pending.put(event, stream);
        } else {
            pending.remove(event);
        }
        return rc;
    }

    /** While true, eventQuery does not return: as a driver call that hangs (the watchdog's thread gets stuck). */
    private boolean queriesHang;
    /** How many threads are inside a hanging eventQuery now. */
    private int hangingQueries;

    /** From now on eventQuery does not return until {@link #releaseEventQueries()}: a driver call that hangs. */
    synchronized FakeCuda hangEventQueries() {
        queriesHang = true;
        return this;
    }

    /** The hanging eventQuery calls return, and later ones do not hang. */
    synchronized void releaseEventQueries() {
        queriesHang = false;
        notifyAll();
    }

    /** @return how many threads are inside a hanging eventQuery now */
    synchronized int hangingQueries() {
        return hangingQueries;
    }

    /** Not recorded in {@link #calls()}: the watchdog asks many times. 600 (cudaErrorNotReady) while pending. */
    @Override
    public synchronized int eventQuery(long event) {
        if (queriesHang) {
            hangingQueries++;
            try {
                while (queriesHang) {
                    wait();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 999;
            } finally {
                hangingQueries--;
            }
        }
        Integer f = failures.get("eventQuery");
        if (f != null && f != 0) {
            return f;
        }
        return pending.containsKey(event) ? 600 : 0;
    }

    /** Not recorded in {@link #calls()}: waits that poll ask many times. 600 while the stream is stalled. */
    @Override
    public synchronized int streamQuery(long stream) {
        return stalled.contains(stream) ? 600 : 0;
    }

    /** From now on the work on {@code stream} does not complete: as a collective whose peer never comes. */
    public synchronized void stall(long stream) {
        stalled.add(stream);
    }

    /** The work on {@code stream} completes: as when the communicator is aborted. */
    public synchronized void release(long stream) {
        stalled.remove(stream);
        pending.values().removeIf(s -> s == stream);
        notifyAll();
    }

    @Override
    public synchronized int eventSynchronize(long event) {
        int rc = record("eventSynchronize", "event", event);
        while (pending.containsKey(event)) {
            try {
                wait();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 999;
            }
        }
        return rc;
    }

    @Override
    public synchronized int eventElapsedTime(float[] ms, long start, long end) {
        int rc = record("eventElapsedTime", "start", start, "end", end);
        if (rc == 0) {
            ms[0] = elapsedMs;
        }
        return rc;
    }

    @Override
    public synchronized int streamWaitEvent(long stream, long event) {
        return record("streamWaitEvent", "stream", stream, "event", event);
    }

    @Override
    public synchronized int pointerDevice(long address, int[] device) {
        int rc = record("pointerDevice", "address", address);
        if (rc == 0) {
            Allocation a = containing(address, 1);
            device[0] = a == null ? -1 : a.device;
        }
        return rc;
    }

    @Override
    public String errorName(int code) {
        String[] e = ERRORS.get(code);
        return errorNames ? (e != null ? e[0] : "cudaErrorUnknown") : null;
    }

    @Override
    public String errorString(int code) {
        String[] e = ERRORS.get(code);
        return errorNames ? (e != null ? e[1] : "unrecognized error code") : null;
    }
}
