package org.nccl4j;

import org.nccl4j.tools.cli.JsonDocs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.perf.Perf;
import org.nccl4j.tools.perf.PerfArgs;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.jni.StubNccl;

/**
 * nccl4j-perf end to end on the CPU: the stub NCCL answers every call at once and the fake CUDA runtime reports
 * 1 ms between any two events, so the numbers mean nothing, but every path runs: one process driving 2 "GPUs",
 * every operation, eager and CUDA graph, in and out of place, the report, -J and --plot. (Which calls reach NCCL
 * is the core tests' business; the data check needs real GPUs.)
 *
 * <p>The stub's ncclMemAlloc hands out addresses the fake CUDA runtime never allocated; {@link #stubMemory} lets
 * the fake's memset and memcpy pass over them (copying nothing), as nccl4j-perf allocates with ncclMemAlloc.
 */
class PerfOnStubTest {
    private FakeCuda cuda;

    @BeforeEach
    void fake() {
        cuda = FakeCuda.install(2).elapsedMs(1.0f);
        CudaCalls.useBackend(stubMemory(cuda));
        StubNccl.useFull();
        NcclNative.unsetenv("NCCL_STUB_LOG");
    }

    /** The stub NCCL's ncclMemAlloc addresses: 0xA0000000 upwards, 4 KiB apart (nccl_stub.c). */
    private static boolean stubAddress(long a) {
        return a >= 0xA0000000L && a < 0xB0000000L;
    }

    /** {@code fake}, whose memset and memcpy accept the stub's ncclMemAlloc addresses and do nothing there. */
    private static CudaBackend stubMemory(FakeCuda fake) {
        return (CudaBackend) java.lang.reflect.Proxy.newProxyInstance(CudaBackend.class.getClassLoader(),
                new Class<?>[] {CudaBackend.class}, (proxy, method, args) -> {
                    String m = method.getName();
                    if ((m.equals("memset") && stubAddress((Long) args[0]))
                            || (m.equals("memcpy") && (stubAddress((Long) args[0]) || stubAddress((Long) args[1])))) {
                        return 0;
                    }
                    try {
                        return method.invoke(fake, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @AfterEach
    void restore() {
        CudaCalls.useBackend(null);
    }

    private static String run(int expectedStatus, String... argv) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int status = Perf.run(PerfArgs.parse(argv), new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(expectedStatus, status, out);
        return out;
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyOperationEagerWithJsonAndPlot(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("r.json");
        Path png = dir.resolve("r.png");
        String out = run(0, "--ops", "all", "-b", "8", "-e", "1K", "-f", "4", "-n", "10", "-w", "1", "-c", "0", "-g", "2",
                "-J", json.toString(), "--plot", png.toString(), "--timer", "events");
        assertTrue(out.contains("# Collective test starting: all_reduce"), out);
        assertTrue(out.contains("# Collective test concluded: scatter"), out);
        assertTrue(out.contains("#  Rank  1 Group  0"), out);
        // sizes 8, 32, 128, 512; 1 ms per 10 iterations = 100 us; 512 B all_reduce: algbw 512 B / 100 us
        assertTrue(out.contains("         512           128     float     sum      -1   100.00    0.01    0.01    N/A"
                + "   100.00    0.01    0.01    N/A"), out);
        Map<String, Object> doc = (Map<String, Object>) JsonDocs.read(Files.readString(json));
        assertEquals("nccl4j-perf", doc.get("format"));
        assertEquals(1.0, doc.get("version"), "the results format's version (docs/formats.md)");
        assertEquals("single-process", doc.get("mode"));
        assertEquals(2.0, doc.get("ranks"));
        List<Object> results = (List<Object>) doc.get("results");
        assertEquals(9 * 4 * 2, results.size(), "9 operations x 4 sizes x 2 placements");
        Map<String, Object> r = (Map<String, Object>) results.get(0);
        assertEquals(100.0, (Double) r.get("time_us"), 1e-6);
        assertTrue(r.containsKey("alloc_bytes"), r.toString());
        assertTrue(Files.size(png) > 1000);
        assertEquals("events", ((Map<String, Object>) doc.get("config")).get("timer"));
    }

    /**
     * {@code argv} with the host clock replaced by one that advances 1 ms a reading and notes, at each reading, how
     * many calls the fake CUDA runtime and the stub NCCL had recorded: what ran between the timer's readings.
     */
    private String runClocked(StubNccl stub, List<int[]> readings, String... argv) {
        PerfArgs a = PerfArgs.parse(argv);
        a.clock = () -> {
            readings.add(new int[] {cuda.calls().size(), stub.calls().size()});
            return readings.size() * 1_000_000L;
        };
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        // the watchdog records markers and queries NCCL whenever it polls: off, so that every call logged is ours
        String before = System.setProperty("nccl4j.watchdog", "off");
        try {
            assertEquals(0, Perf.run(a, new PrintStream(bytes, true, StandardCharsets.UTF_8)));
        } finally {
            if (before == null) {
                System.clearProperty("nccl4j.watchdog");
            } else {
                System.setProperty("nccl4j.watchdog", before);
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void byDefaultTheHostClockRunsFromTheBarrierToTheStreamsCompletionAsInNcclTests() {
        StubNccl stub = StubNccl.fresh();
        List<int[]> at = new java.util.ArrayList<>();
        String out = runClocked(stub, at, "all_reduce_perf", "-b", "1K", "-e", "1K", "-n", "3", "-w", "0", "-c", "0",
                "-g", "2", "--jit_quiet_ms", "0", "--jit_warmup", "0", "--timer", "host");
        // per measurement three readings: the timer's start, the end of issuing (-C), the streams' completion
        assertEquals(6, at.size(), "out of place, then in place");
        // (reading 3 - reading 1) = 2 ms over 3 operations, out of place and in place alike
        assertTrue(out.contains("        1024           256     float     sum      -1   666.67    0.00    0.00    N/A"
                + "   666.67    0.00    0.00    N/A"), out);
        for (int m = 0; m < 2; m++) {
            int[] start = at.get(3 * m);
            int[] issued = at.get(3 * m + 1);
            int[] done = at.get(3 * m + 2);
            List<String> cudaBefore = cuda.calls().subList(0, start[0]);
            List<String> cudaTimed = cuda.calls().subList(start[0], done[0]);
            List<String> ncclTimed = stub.calls().subList(start[1], done[1]);
            // the barrier right before the start (one process: a wait for both streams), as MPI_Barrier in nccl-tests
            assertTrue(cudaBefore.get(cudaBefore.size() - 1).startsWith("streamSynchronize "), cudaBefore.toString());
            assertTrue(cudaBefore.get(cudaBefore.size() - 2).startsWith("streamSynchronize "), cudaBefore.toString());
            // timed: the 3 iterations on 2 GPUs, each a group of two all-reduces, and no CUDA event
            assertEquals(6, ncclTimed.stream().filter(l -> l.startsWith("ncclAllReduce ")).count(),
                    ncclTimed.toString());
            assertEquals(3, ncclTimed.stream().filter(l -> l.startsWith("ncclGroupEnd")).count(), ncclTimed.toString());
            assertTrue(cudaTimed.stream().noneMatch(l -> l.startsWith("eventRecord")), cudaTimed.toString());
            // issued, then both streams waited for before the last reading: the sync at the end is timed
            List<String> end = cuda.calls().subList(issued[0], done[0]);
            assertEquals(List.of("streamSynchronize", "streamSynchronize"),
                    end.stream().map(l -> l.split(" ")[0]).toList(), end.toString());
            assertEquals(0, done[1] - issued[1], "no NCCL call after the issuing: " + stub.calls().subList(issued[1],
                    done[1]));
        }
    }

    @Test
    void withCudaGraphsTheHostClockTimesTheLaunchesAndTheWait() {
        StubNccl stub = StubNccl.fresh();
        List<int[]> at = new java.util.ArrayList<>();
        String out = runClocked(stub, at, "all_reduce_perf", "-b", "1K", "-e", "1K", "-n", "3", "-G", "2", "-c", "0",
                "-g", "2", "--jit_quiet_ms", "0", "--timer", "host");
        assertEquals(6, at.size());
        // 2 ms over 3 iterations x 2 launches
        assertTrue(out.contains("   333.33    0.00    0.00    N/A   333.33    0.00    0.00    N/A"), out);
        for (int m = 0; m < 2; m++) {
            List<String> timed = cuda.calls().subList(at.get(3 * m)[0], at.get(3 * m + 2)[0]).stream()
                    .map(l -> l.split(" ")[0]).toList();
            // the capture and instantiation came before the barrier; timed: 2 launches on 2 GPUs, then the waits
            assertEquals(List.of("graphLaunch", "graphLaunch", "graphLaunch", "graphLaunch", "streamSynchronize",
                    "streamSynchronize"), timed);
        }
    }

    @Test
    void cudaGraphRunsCaptureAndReplay() {
        int before = cuda.calls().size();
        String out = run(0, "--ops", "all_reduce,sendrecv", "-b", "1K", "-e", "1K", "-n", "5", "-G", "4", "-c", "0", "-g", "2",
                "--timer", "events");
        List<String> all = cuda.calls();
        List<String> calls = all.subList(before, all.size());
        long launches = calls.stream().filter(c -> c.startsWith("graphLaunch ")).count();
        // 2 operations x 2 placements x 4 launches x 2 GPUs
        assertEquals(32, launches, calls.toString());
        assertEquals(8, calls.stream().filter(c -> c.startsWith("streamBeginCapture ")).count());
        // 1 ms over 5 iterations x 4 launches = 50 us
        assertTrue(out.contains("    50.00"), out);
        assertEquals(0, Capture.active());
    }

    @Test
    void checkedRunsReportWrongElementsOnTheFake() {
        // the fake CUDA runtime copies nothing, so the check must find wrong elements and fail the run
        String out = run(1, "broadcast_perf", "-b", "1K", "-e", "1K", "-n", "2", "-c", "1", "-g", "2", "-r", "0");
        assertTrue(out.contains("FAILED"), out);
    }

    @Test
    void buffersComeFromNcclMemAllocAndRegisterWithR1() {
        StubNccl stub = StubNccl.fresh();
        String out = run(0, "all_reduce_perf", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-c", "0", "-g", "2",
                "-R", "1");
        assertTrue(out.contains("# Buffers: ncclMemAlloc, registered (ncclCommRegister)"), out);
        // send and receive buffer on each of 2 GPUs, of -e bytes
        assertEquals(4, stub.calls("ncclMemAlloc").size(), stub.calls().toString());
        assertTrue(stub.calls("ncclMemAlloc").stream().allMatch(c -> c.equals("ncclMemAlloc size=4096")),
                stub.calls("ncclMemAlloc").toString());
        assertEquals(4, stub.calls("ncclCommRegister").size());
        assertEquals(4, stub.calls("ncclCommDeregister").size());
        assertEquals(4, stub.calls("ncclMemFree").size());
        assertEquals(0, stub.calls("ncclCommWindowRegister").size());
    }

    @Test
    void symmetricWindowsWithR2AndTheConfigOfX() {
        StubNccl stub = StubNccl.fresh();
        String out = run(0, "all_reduce_perf", "-b", "1K", "-e", "1K", "-n", "2", "-c", "0", "-R", "2", "-x", "1",
                "-u", "3");
        assertTrue(out.contains("# Buffers: ncclMemAlloc, symmetric windows (ncclCommWindowRegister), unaligned by 3"
                + " elements"), out);
        assertTrue(out.contains("# Communicator config: CTAPolicy 1"), out);
        List<String> windows = stub.calls("ncclCommWindowRegister");
        assertEquals(2, windows.size(), stub.calls().toString());
        // -u 3 pads the allocation by 8 bytes an element, and the window covers it all
        assertTrue(windows.stream().allMatch(c -> c.endsWith("size=1048 flags=1")), windows.toString());
        assertEquals(2, stub.calls("ncclCommWindowDeregister").size());
        assertEquals(1, stub.calls("ncclCommInitRankConfig").size(), stub.calls().toString());
        assertEquals(0, stub.calls("ncclCommRegister").size());
    }

    @Test
    void aggregationCyclesCputimeAndTimestamps() {
        StubNccl stub = StubNccl.fresh();
        String out = run(0, "all_reduce_perf", "-b", "1K", "-e", "2K", "-f", "2", "-n", "5", "-m", "4", "-N", "3",
                "-c", "0", "-w", "0", "-C", "1", "-S", "1", "-g", "2", "--jit_quiet_ms", "0");
        assertTrue(out.contains("agg iters: 4"), out);
        assertTrue(out.contains(" cputime   algbw   busbw  #wrong  cputime ") && out.contains("timestamp"), out);
        long rows = out.lines().filter(l -> l.matches(" +(1024|2048) +\\d+ +float.*")).count();
        assertEquals(6, rows, "2 sizes x 3 cycles: " + out);
        assertTrue(out.lines().filter(l -> l.matches(" +1024 .*")).allMatch(l -> l.matches(
                ".* \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d")), out);
        // 2 GPUs x (1 untimed + 5 iterations x 4 aggregated) x 2 placements x 2 sizes x 3 cycles, plus barriers
        assertTrue(stub.calls("ncclAllReduce").size() >= 2 * 21 * 2 * 2 * 3, stub.calls("ncclAllReduce").size()
                + " calls");
    }

    @Test
    void theJitWarmupCallsTheTimedLoopBeforeTheSizesAndSaysSo() {
        StubNccl stub = StubNccl.fresh();
        String base = run(0, "all_reduce_perf", "-b", "1K", "-e", "1K", "-n", "5", "-c", "0", "-w", "0",
                "--jit_quiet_ms", "0", "--jit_warmup", "0");
        long without = stub.calls("ncclAllReduce").size();
        assertTrue(!base.contains("# JIT warm-up"), base);
        StubNccl warm = StubNccl.fresh();
        String out = run(0, "all_reduce_perf", "-b", "1K", "-e", "1K", "-n", "5", "-c", "0", "-w", "0",
                "--jit_quiet_ms", "0", "--jit_warmup", "300");
        assertEquals(without + 300, warm.calls("ncclAllReduce").size(), "300 more operations, one per call");
        // of 16 bytes (one rank): the timed loop's code without the traffic of the sweep's first size
        List<String> warmups = warm.calls("ncclAllReduce").stream().filter(l -> l.contains(" count=4 datatype=7"))
                .toList();
        assertEquals(300, warmups.size());
        // out of place and in place in turn, as the sweep issues them
        assertEquals(150, warmups.stream().filter(l -> l.replaceAll(".*sendbuff=(0x[0-9a-f]+) .*", "$1").equals(
                l.replaceAll(".*recvbuff=(0x[0-9a-f]+) .*", "$1"))).count(), warmups.subList(0, 4).toString());
        assertEquals(0, stub.calls("ncclAllReduce").stream().filter(l -> l.contains(" count=4 datatype=7")).count());
        assertTrue(out.contains("# JIT warm-up: 300 calls of the timed loop (16 B a rank at most) before each "
                + "sweep (--jit_warmup)"), out);
    }

    @Test
    void afterEachJitWaitTheOperationRunsWarmupTimesMoreAtMostIters() {
        // one process, 2 GPUs, 2 sizes x 2 placements = 4 measurements, -n 5: each JIT wait adds min(-w, 5) more
        // operations on each GPU before the untimed one
        assertEquals(allReduces("3", "0") + 4 * 3 * 2, allReduces("3", "1"));
        assertEquals(allReduces("8", "0") + 4 * 5 * 2, allReduces("8", "1"), "-w above -n: -n of them");
        assertEquals(allReduces("0", "0"), allReduces("0", "1"), "-w 0: none");
    }

    /** The ncclAllReduce calls of a 2-GPU sweep of 1K and 2K with -n 5 and the given -w and --jit_quiet_ms. */
    private static long allReduces(String warmup, String jitQuietMs) {
        StubNccl stub = StubNccl.fresh();
        run(0, "all_reduce_perf", "-b", "1K", "-e", "2K", "-f", "2", "-n", "5", "-c", "0", "-w", warmup, "-g", "2",
                "--jit_warmup", "0", "--jit_quiet_ms", jitQuietMs);
        return stub.calls("ncclAllReduce").size();
    }

    @Test
    void withOpTimesTheJitWarmupRecordsTheEventAsTheTimedLoopDoes() {
        String[] base = {"all_reduce_perf", "-b", "1K", "-e", "1K", "-n", "5", "-c", "0", "-w", "0",
            "--jit_quiet_ms", "0", "--op_times", "1", "--jit_warmup"};
        String[] none = java.util.Arrays.copyOf(base, base.length + 1);
        none[base.length] = "0";
        String[] forty = java.util.Arrays.copyOf(base, base.length + 1);
        forty[base.length] = "40";
        // the watchdog records its markers on the same stream whenever it polls: off, so that every record counted
        // is nccl4j-perf's own
        String before = System.setProperty("nccl4j.watchdog", "off");
        try {
            cuda.clearCalls();
            run(0, none);
            int without = cuda.calls("eventRecord").size();
            cuda.clearCalls();
            String out = run(0, forty);
            // one event after each warm-up call (the branch the timed loop takes)
            assertEquals(without + 40, cuda.calls("eventRecord").size(), cuda.calls("eventRecord").toString());
            assertTrue(out.contains("#  per operation (us, rank 0): out-of-place p10 1000.00 p50 1000.00"), out);
            // one process: its first operation as the others, no spread of the loop's start
            assertTrue(out.contains("max 1000.00 first 1000.00 start spread 0.00; in-place"), out);
        } finally {
            if (before == null) {
                System.clearProperty("nccl4j.watchdog");
            } else {
                System.setProperty("nccl4j.watchdog", before);
            }
        }
    }

    @Test
    void eachOperationStartsOneFootprintFurtherAsNcclTestsRotatesTheBuffers() {
        StubNccl stub = StubNccl.fresh();
        run(0, "all_reduce_perf", "-b", "1K", "-e", "4K", "-f", "4", "-n", "6", "-c", "0", "-w", "0",
                "--jit_quiet_ms", "0", "--jit_warmup", "0");
        long send = Long.decode(firstAddress(stub, "sendbuff"));
        long recv = Long.decode(firstAddress(stub, "recvbuff"));
        List<String> calls = stub.calls("ncclAllReduce");
        // per size and placement: the untimed call at 0, then 6 timed ones (the barriers reduce elsewhere)
        List<String> ours = calls.stream().filter(l -> l.contains("datatype=7")).toList();
        assertEquals(2 * 2 * 7, ours.size(), calls.toString());
        long[] oneK = {0, 0, 1024, 2048, 3072, 0, 1024}; // -e 4K holds four 1 KiB footprints
        for (int i = 0; i < 7; i++) {
            String out = ours.get(i);
            String in = ours.get(7 + i);
            assertTrue(out.contains(String.format("sendbuff=0x%x recvbuff=0x%x count=256 ", send + oneK[i],
                    recv + oneK[i])), i + ": " + out);
            assertTrue(in.contains(String.format("sendbuff=0x%x recvbuff=0x%x count=256 ", recv + oneK[i],
                    recv + oneK[i])), i + ": " + in);
        }
        // 4 KiB fills -e: every operation at the start
        assertTrue(ours.subList(14, 28).stream().allMatch(l -> l.contains(String.format(
                "sendbuff=0x%x recvbuff=0x%x count=1024 ", send, recv)) || l.contains(String.format(
                "sendbuff=0x%x recvbuff=0x%x count=1024 ", recv, recv))), ours.subList(14, 28).toString());
    }

    private static String firstAddress(StubNccl stub, String key) {
        String line = stub.calls("ncclAllReduce").stream().filter(l -> l.contains("datatype=7")).findFirst()
                .orElseThrow();
        return line.replaceAll(".*" + key + "=(0x[0-9a-f]+).*", "$1");
    }

    @Test
    void theLoadedNcclRefusesWhatItCannotHonour() {
        PerfArgs a = PerfArgs.parse("all_reduce_perf", "-R", "2");
        String m = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> a.requireSupportedBy(22605, "2.26.5")).getMessage();
        assertEquals("-R (--local_register): '2' needs NCCL 2.27 or newer (ncclCommWindowRegister, symmetric "
                + "windows); the loaded NCCL is 2.26.5: use -R 1", m);
        a.requireSupportedBy(22700, "2.27.0");
    }
}
