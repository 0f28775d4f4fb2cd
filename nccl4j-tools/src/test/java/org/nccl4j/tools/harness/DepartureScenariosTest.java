package org.nccl4j.tools.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Stream;
import org.nccl4j.StubFixture;
import org.nccl4j.tools.cli.Tools;
import org.nccl4j.tools.harness.DepartureScenarios.Options;
import org.nccl4j.tools.harness.DepartureScenarios.Scenario;
import org.nccl4j.jni.StubNccl;

/**
 * DepartureScenarios on the CPU: its command line and what it refuses, and its loop of steps against the stub NCCL
 * and the fake CUDA runtime on a one-rank communicator (where an all-reduce leaves the buffer as it is, so the host's
 * check holds): which all-reduces reach NCCL with which count and type, and the lines it prints. The scenarios that
 * signal or end the process (kill, stop, exit, sigterm-rank) run only on GPUs, through scripts/departures.sh.
 */
class DepartureScenariosTest extends StubFixture {
    private static final Consumer<String> STDOUT = DepartureScenarios.sink;
    /** What the loop printed: the closing thread of close-thread and abort-thread prints too. */
    private final List<String> lines = new CopyOnWriteArrayList<>();

    @AfterEach
    void restoreTheSink() {
        DepartureScenarios.sink = STDOUT;
        DepartureScenarios.closer = null;
        DepartureScenarios.expected = null;
    }

    private static Options parse(String... args) {
        return Tools.parse(new Options(), args);
    }

    private static String refusal(int world, String... args) {
        Options o = parse(args);
        return assertThrows(Tools.UsageException.class, () -> o.eventRank(world)).getMessage();
    }

    @Test
    void theDefaultsAreTheLastRankAtStepThreeOfEightWithAMillionFloats() {
        Options o = parse("kill");
        assertEquals(Scenario.KILL, o.scenario);
        assertEquals(3, o.eventRank(4));
        assertEquals(1, o.eventRank(2));
        assertEquals(8, o.steps);
        assertEquals(3, o.step);
        assertEquals(1L << 20, o.elements);
        assertEquals(50, o.sleepMs);
        assertEquals(60, o.stuckSeconds);
        assertEquals(30, o.liveSeconds);
        Options p = parse("count", "--rank", "0", "--step", "8", "--steps", "8", "--count", "64K", "--sleep-ms", "0");
        assertEquals(0, p.eventRank(2));
        assertEquals(65536, p.elements);
        assertEquals(8, p.step);
    }

    @Test
    void everyScenarioHasItsCommandLineName() {
        List<String> names = Arrays.stream(Scenario.values()).map(s -> s.label).collect(Collectors.toList());
        assertEquals(List.of("kill", "stop", "throw-inside", "throw-outside", "exit", "abort-live", "skip", "count",
                "type", "sigterm-rank", "sigterm-launcher", "cpu-stuck", "startup-rendezvous-kill",
                "startup-rendezvous-term", "startup-idtaken-kill", "startup-idtaken-term", "startup-init-kill",
                "startup-init-term", "startup-init-exit", "close-thread", "abort-thread", "fuzz", "startup-fuzz", "none"),
                names);
        for (String n : names) {
            assertEquals(n, parse(n).scenario.label);
        }
        Tools.UsageException e = assertThrows(Tools.UsageException.class, () -> parse("THROW_INSIDE"));
        assertTrue(e.getMessage().contains("'THROW_INSIDE' is not one of kill, stop, throw-inside, throw-outside, exit, "
                + "abort-live, skip, count, type, sigterm-rank, sigterm-launcher, cpu-stuck, startup-rendezvous-kill, "
                + "startup-rendezvous-term, startup-idtaken-kill, startup-idtaken-term, startup-init-kill, "
                + "startup-init-term, startup-init-exit, close-thread, abort-thread, fuzz, startup-fuzz, none"),
                e.getMessage());
        assertTrue(e.getMessage().endsWith("try 'DepartureScenarios --help'"), e.getMessage());
        e = assertThrows(Tools.UsageException.class, () -> parse("kill", "--steps", "many"));
        assertTrue(e.getMessage().startsWith("Invalid value for option '--steps': 'many' is not an int"), e.getMessage());
        String help = new picocli.CommandLine(new Options()).getUsageMessage();
        assertTrue(help.contains("One of: kill, stop, throw-inside, throw-outside,")
                && help.contains("startup-init-exit, close-thread, abort-thread,")
                && help.contains("fuzz, startup-fuzz, none."), help);
    }

    @Test
    void whatDoesNotFitTheWorldIsRefusedNamingTheOptionAndTheFix() {
        assertEquals("DepartureScenarios needs 2 or more ranks, and this is a world of 1: launch it with nccl4j-run, "
                + "mpirun or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT", refusal(1, "kill"));
        assertEquals("--step 9 is not one of the steps 1..8 (--steps 8)", refusal(2, "kill", "--step", "9"));
        assertEquals("--step 0 is not one of the steps 1..8 (--steps 8)", refusal(2, "kill", "--step", "0"));
        assertEquals("--steps 0 is not a number of steps: use 1 or more", refusal(2, "kill", "--steps", "0"));
        assertEquals("--rank 4 is not a rank of this world of 4: use 0..3, or -1 for the last",
                refusal(4, "kill", "--rank", "4"));
        assertEquals("--rank -2 is not a rank of this world of 2: use 0..1, or -1 for the last",
                refusal(2, "kill", "--rank", "-2"));
        String count = "is not a count of 2..1073741823 floats (count halves it, type doubles it), such as 1024 or 1M";
        assertEquals("--count 1 " + count, refusal(2, "count", "--count", "1"));
        assertEquals("--count lots " + count, refusal(2, "count", "--count", "lots"));
        assertEquals("--count 1G " + count, refusal(2, "type", "--count", "1G"));
        assertEquals("--sleep-ms, --stuck-seconds and --live-seconds cannot be negative",
                refusal(2, "cpu-stuck", "--stuck-seconds", "-1"));
        // everything that is wrong, in one line
        assertEquals("DepartureScenarios needs 2 or more ranks, and this is a world of 1: launch it with nccl4j-run, "
                + "mpirun or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT; --step 12 is not one of the steps 1..8 (--steps "
                + "8)", refusal(1, "skip", "--step", "12"));
    }

    @Test
    void aResultNamesTheExceptionAndItsMessageOnOneLine() {
        assertEquals("IllegalStateException: data loader failed on rank 1",
                DepartureScenarios.describe(new IllegalStateException("data loader failed on rank 1")));
        assertEquals("RuntimeException: first line second line",
                DepartureScenarios.describe(new RuntimeException("first line\n   second line\r\n")));
        assertEquals("NullPointerException", DepartureScenarios.describe(new NullPointerException()));
    }

    @Test
    void theCheckThrowsAtTheFirstWrongElement() {
        DepartureScenarios.check(new float[] {3, 3, 3}, 3f, 2, 1);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> DepartureScenarios.check(new float[] {10, 10, 4, 2}, 10f, 4, 3));
        assertEquals("step 3: element 2 is 4.0, expected 10.0 (the sum of 1..4)", e.getMessage());
    }

    // ---------------------------------------------------------------- the loop, on the stub

    /** Runs the loop of {@code args} as rank 0 of a one-rank communicator, rank 0 doing the scenario. */
    private List<String> loop(String... args) throws Exception {
        Options o = parse(args);
        o.eventRank(2);   // checks the options as for two ranks and sets the count; rank 0 does the scenario here
        Communicator comm = comm(0, 1);
        Stream stream = stream(0);
        DeviceBuffer buf = buffer(0, o.elements, DataType.FLOAT32);
        lines.clear();
        DepartureScenarios.sink = lines::add;
        mark();
        DepartureScenarios.steps(o, 0, comm, stream, buf);
        return lines;
    }

    private List<Map<String, String>> allReduces() {
        return newCalls().stream().filter(c -> c.startsWith("ncclAllReduce ")).map(StubNccl::parse)
                .collect(Collectors.toList());
    }

    private static String kinds(List<String> lines) {
        return lines.stream().map(l -> l.split(" ")[0]).collect(Collectors.joining(" "));
    }

    @Test
    void aRunWithoutDepartureAllReducesEveryStepInPlace() throws Exception {
        List<String> out = loop("none", "--count", "1024", "--sleep-ms", "0");
        assertEquals("START", kinds(out));
        assertTrue(out.get(0).matches("START rank=0 t=\\d{13} pid=\\d+ size=1 device=0 none"), out.get(0));
        List<Map<String, String>> ar = allReduces();
        assertEquals(8, ar.size());
        for (Map<String, String> a : ar) {
            assertEquals("1024", a.get("count"));
            assertEquals(Integer.toString(DataType.FLOAT32.code()), a.get("datatype"));
            assertEquals(a.get("sendbuff"), a.get("recvbuff"), "in place");
        }
    }

    @Test
    void skipLeavesOutStepSAndItsCheck() throws Exception {
        List<String> out = loop("skip", "--count", "1024", "--sleep-ms", "0", "--step", "3");
        assertEquals("START EVENT", kinds(out));
        assertTrue(out.get(1).matches("EVENT rank=0 t=\\d{13} skip"), out.get(1));
        assertEquals(7, allReduces().size());
    }

    @Test
    void countAndTypeChangeStepSsAllReduceOnly() throws Exception {
        List<String> out = loop("count", "--count", "1024", "--sleep-ms", "0");
        assertTrue(out.get(1).matches("EVENT rank=0 t=\\d{13} count \\(512 x FLOAT32\\)"), out.get(1));
        List<String> counts = allReduces().stream().map(a -> a.get("count")).collect(Collectors.toList());
        assertEquals(List.of("1024", "1024", "512", "1024", "1024", "1024", "1024", "1024"), counts);
        out = loop("type", "--count", "1024", "--sleep-ms", "0", "--step", "2");
        assertTrue(out.get(1).matches("EVENT rank=0 t=\\d{13} type \\(2048 x FLOAT16\\)"), out.get(1));
        Map<String, String> second = allReduces().get(1);
        assertEquals("2048", second.get("count"));
        assertEquals(Integer.toString(DataType.FLOAT16.code()), second.get("datatype"));
        assertEquals(Integer.toString(DataType.FLOAT32.code()), allReduces().get(2).get("datatype"));
    }

    @Test
    void throwInsideThrowsTheDataLoadersExceptionAfterItsEvent() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> loop("throw-inside", "--count", "16", "--sleep-ms", "0"));
        assertEquals("data loader failed on rank 0", e.getMessage());
        assertEquals("START EVENT THROWN", kinds(lines));
        assertTrue(lines.get(2).matches("THROWN rank=0 t=\\d{13} IllegalStateException"), lines.get(2));
        assertEquals(2, allReduces().size(), "steps 1 and 2 ran");
    }

    @Test
    void abortLiveAbortsTheCommunicatorAndIssuesNothingMore() throws Exception {
        List<String> out = loop("abort-live", "--count", "16", "--sleep-ms", "0", "--live-seconds", "0");
        assertEquals("START EVENT rank", kinds(out));
        assertEquals("rank 0: aborted its communicator and lives on: CPU work for 0 s, then exit 0", out.get(2));
        assertEquals(1, newCalls().stream().filter(c -> c.startsWith("ncclCommAbort ")).count(), newCalls().toString());
        assertEquals(2, allReduces().size());
    }

    @Test
    void sigtermLauncherHasRankZeroMarkTheStepAndEveryRankWaitInsideIt() throws Exception {
        long t0 = System.nanoTime();
        List<String> out = loop("sigterm-launcher", "--count", "16", "--sleep-ms", "0", "--rank", "1");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals("START EVENT", kinds(out));
        assertTrue(out.get(1).matches("EVENT rank=0 t=\\d{13} sigterm-launcher"), out.get(1));
        assertTrue(ms >= DepartureScenarios.INSIDE_MILLIS, ms + " ms");
        assertEquals(8, allReduces().size());
    }

    @Test
    void cpuStuckSpinsWithoutNcclThenGoesOn() throws Exception {
        List<String> out = loop("cpu-stuck", "--count", "16", "--sleep-ms", "0", "--stuck-seconds", "0");
        assertEquals("START EVENT", kinds(out));
        assertEquals(8, allReduces().size());
    }

    @Test
    void fuzzMarksTheFirstStepAndTheClose() throws Exception {
        for (String scenario : List.of("fuzz", "startup-fuzz")) {
            List<String> out = loop(scenario, "--count", "16", "--sleep-ms", "0", "--steps", "5");
            assertEquals("START READY CLOSING", kinds(out), scenario);
            assertTrue(out.get(0).endsWith(" " + scenario), out.get(0));
            assertTrue(out.get(1).matches("READY rank=0 t=\\d{13}"), out.get(1));
            assertTrue(out.get(2).matches("CLOSING rank=0 t=\\d{13}"), out.get(2));
            assertEquals(5, allReduces().size());
        }
    }

    /** The start-up scenarios leave before the loop: on a rank that reaches it they are a run without departure. */
    @Test
    void aStartUpScenarioIssuesEveryStepOnceTheCommunicatorIsMade() throws Exception {
        for (String scenario : List.of("startup-rendezvous-kill", "startup-idtaken-term", "startup-init-exit")) {
            List<String> out = loop(scenario, "--count", "16", "--sleep-ms", "0", "--steps", "4");
            assertEquals("START", kinds(out), scenario);
            assertEquals(4, allReduces().size(), scenario);
            Scenario s = parse(scenario).scenario;
            assertTrue(s.watched(), scenario);
        }
        assertEquals(DepartureScenarios.Phase.RENDEZVOUS, Scenario.STARTUP_RENDEZVOUS_TERM.at);
        assertEquals("TERM", Scenario.STARTUP_RENDEZVOUS_TERM.way);
        assertEquals(DepartureScenarios.Phase.SET_DEVICE, Scenario.STARTUP_IDTAKEN_KILL.until(),
                "id-taken is placed up to the NCCL call");
        assertEquals(DepartureScenarios.Phase.NCCL_INIT, Scenario.STARTUP_INIT_EXIT.until());
        assertEquals("EXIT", Scenario.STARTUP_INIT_EXIT.way);
        assertTrue(Scenario.STARTUP_FUZZ.watched() && Scenario.STARTUP_FUZZ.at == null);
        assertTrue(!Scenario.FUZZ.watched() && !Scenario.CLOSE_THREAD.watched() && !Scenario.KILL.watched());
    }

    /** The main thread's expected end in close-thread and abort-thread: the communicator is being closed, or is. */
    private static final String BEING_CLOSED = "this Communicator \\(rank 0 of 1\\) is (being closed: (close|abort)"
            + "\\(\\) on thread \"departures-closer\", while thread \"[^\"]+\" issued the collectives|closed.*)";
    /** The closing thread's EVENT text after the scenario's name. */
    private static final String ON_THREAD = "\\(\\) on thread \"departures-closer\", while thread \"[^\"]+\" issues "
            + "all-reduces\\)";

    @Test
    void closeThreadClosesOnASecondThreadAndTheMainThreadsIllegalStateIsTheExpectedEnd() throws Exception {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> loop("close-thread", "--count", "16", "--sleep-ms", "50", "--steps", "40", "--step", "2"));
        assertTrue(e.getMessage().matches(BEING_CLOSED), e.getMessage());
        assertTrue(e == DepartureScenarios.expected, "the main thread's end is the one close-thread expects");
        assertEquals("START EVENT THROWN", kinds(lines));
        assertTrue(lines.get(1).matches("EVENT rank=0 t=\\d{13} close-thread \\(close" + ON_THREAD), lines.get(1));
        assertTrue(lines.get(1).contains("while thread \"" + Thread.currentThread().getName() + "\""), lines.get(1));
        int issued = allReduces().size();
        assertTrue(issued >= 1 && issued < 40, issued + " all-reduces: the main thread was stopped, after step 1");
        String report = DepartureScenarios.closer.report(0, 10_000);
        assertTrue(report.matches("rank 0: close\\(\\) on thread \"departures-closer\" returned after \\d+ ms"),
                report);
        assertEquals(0, newCalls().stream().filter(c -> c.startsWith("ncclCommAbort ")).count(),
                newCalls().toString());
    }

    @Test
    void abortThreadAbortsOnASecondThreadAndTheMainThreadsIllegalStateIsTheExpectedEnd() throws Exception {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> loop("abort-thread", "--count", "16", "--sleep-ms", "50", "--steps", "40", "--step", "3"));
        assertTrue(e.getMessage().matches(BEING_CLOSED), e.getMessage());
        assertTrue(e == DepartureScenarios.expected);
        assertTrue(lines.get(1).matches("EVENT rank=0 t=\\d{13} abort-thread \\(abort" + ON_THREAD), lines.get(1));
        int issued = allReduces().size();
        assertTrue(issued >= 2 && issued < 40, issued + " all-reduces: steps 1 and 2 ran, the abort stopped the rest");
        String report = DepartureScenarios.closer.report(0, 10_000);
        assertTrue(report.matches("rank 0: abort\\(\\) on thread \"departures-closer\" returned after \\d+ ms"),
                report);
        assertEquals(1, newCalls().stream().filter(c -> c.startsWith("ncclCommAbort ")).count(),
                newCalls().toString());
    }

    /** A closing thread that never returns is said so, with the wait, instead of holding the rank for ever. */
    @Test
    void aCloserThatHasNotReturnedIsSaidSo() throws Exception {
        Communicator comm = comm(0, 1);
        lines.clear();
        DepartureScenarios.sink = lines::add;
        stub.sleep(org.nccl4j.jni.NcclFunction.ncclCommAbort, 1500);
        DepartureScenarios.Closer c = DepartureScenarios.Closer.start(0, comm, true);
        assertEquals("rank 0: abort() on thread \"departures-closer\" has not returned after 100 ms", c.report(0, 100));
        String done = c.report(0, 10_000);
        assertTrue(done.matches("rank 0: abort\\(\\) on thread \"departures-closer\" returned after "
                + "(1[5-9]|[2-9])\\d\\d ms"), done);
    }
}
