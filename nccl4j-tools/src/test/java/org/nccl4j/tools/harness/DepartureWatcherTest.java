package org.nccl4j.tools.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.Communicator;
import org.nccl4j.StubFixture;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.tools.harness.DepartureScenarios.Phase;
import org.nccl4j.tools.harness.DepartureScenarios.Scenario;
import org.nccl4j.tools.harness.DepartureScenarios.SelfSignal;
import org.nccl4j.tools.harness.DepartureScenarios.Watcher;

/**
 * The start-up scenarios' watcher on the CPU: the phases it reads from a main thread's stack (made-up stacks with the
 * frames of nccl4j's start-up, top first), where it places each scenario and when it says that it could not, the shell
 * that sends the signal (to a {@code sleep} process here, not to the test's JVM), and the watcher on a real thread
 * inside the stub NCCL's {@code ncclCommInitRank}. The whole scenarios, two JVMs on the stub, are
 * {@link StartupScenariosOnStubTest}'s.
 */
class DepartureWatcherTest extends StubFixture {
    private static final Consumer<String> STDOUT = DepartureScenarios.sink;
    private static final String MAIN = "org.nccl4j.tools.harness.DepartureScenarios.main";
    private static final String FROM_ENV = "org.nccl4j.Bootstrap.fromEnvironment";
    private static final String COMM_FROM_ENV = "org.nccl4j.Communicator.fromEnvironment";
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final List<Process> started = new ArrayList<>();

    @BeforeEach
    void collectTheLines() {
        DepartureScenarios.sink = lines::add;
    }

    @AfterEach
    void restoreTheSinkAndEndTheProcesses() {
        DepartureScenarios.sink = STDOUT;
        for (Process p : started) {
            p.destroyForcibly();
        }
    }

    /** A stack, top first, of frames written {@code Class.method}. */
    static StackTraceElement[] stack(String... frames) {
        StackTraceElement[] s = new StackTraceElement[frames.length];
        for (int i = 0; i < frames.length; i++) {
            int dot = frames[i].lastIndexOf('.');
            s[i] = new StackTraceElement(frames[i].substring(0, dot), frames[i].substring(dot + 1), null, -1);
        }
        return s;
    }

    /** A stack inside fromEnvironment with {@code top} (top first) above it. */
    static StackTraceElement[] starting(String... top) {
        List<String> f = new ArrayList<>(List.of(top));
        f.addAll(List.of(FROM_ENV, COMM_FROM_ENV, "org.nccl4j.tools.harness.DepartureScenarios.fromEnvironment", MAIN));
        return stack(f.toArray(new String[0]));
    }

    static final StackTraceElement[] LAUNCHED = stack("java.lang.Thread.sleep", MAIN);
    static final StackTraceElement[] JOINING = starting("org.nccl4j.Nccl.library");
    /** Building the rendezvous (and linking the id supplier's lambda) comes before the exchange: still joining. */
    static final StackTraceElement[] FOR_LAUNCH = starting("org.nccl4j.launch.Rendezvous.forLaunch");
    static final StackTraceElement[] LAMBDA = starting("java.lang.invoke.LambdaMetafactory.metafactory");
    static final StackTraceElement[] FILE_ARRIVALS = starting("org.nccl4j.launch.Rendezvous.awaitArrivals");
    static final StackTraceElement[] EXPLAIN = starting("org.nccl4j.StartupGuard.explain");
    static final StackTraceElement[] FETCH = starting("sun.nio.ch.Net.poll", "java.net.Socket$SocketInputStream.read",
            "org.nccl4j.launch.Rendezvous.readOnClient", "org.nccl4j.launch.Rendezvous.fetch",
            "org.nccl4j.launch.Rendezvous.exchange");
    static final StackTraceElement[] SERVE = starting("org.nccl4j.jni.NcclNative.ncclGetUniqueId",
            "org.nccl4j.UniqueId.generate", "org.nccl4j.Bootstrap.lambda$fromEnvironment$1",
            "org.nccl4j.launch.Rendezvous.newId", "org.nccl4j.launch.Rendezvous.serve",
            "org.nccl4j.launch.Rendezvous.exchange");
    static final StackTraceElement[] ID_OF = starting("org.nccl4j.UniqueId.of");
    static final StackTraceElement[] ARRIVALS = starting("java.util.concurrent.locks.LockSupport.parkNanos",
            "org.nccl4j.control.Liveness.awaitArrivals");
    static final StackTraceElement[] SET_DEVICE = starting("org.nccl4j.Cuda.setDevice", "org.nccl4j.Bootstrap.create");
    static final StackTraceElement[] INIT = starting("org.nccl4j.jni.NcclNative.ncclCommInitRank",
            "org.nccl4j.Bootstrap.create");
    static final StackTraceElement[] INIT_CONFIG = starting("org.nccl4j.jni.NcclNative.ncclCommInitRankConfig",
            "org.nccl4j.Bootstrap.create");
    static final StackTraceElement[] ATTACH = starting("org.nccl4j.CommHealth.attachChannel");
    static final StackTraceElement[] CLOSING = stack("org.nccl4j.Teardown.close", "org.nccl4j.Communicator.close",
            "org.nccl4j.tools.harness.DepartureScenarios.inside", MAIN);

    @Test
    void thePhasesFollowTheMainThreadsStackAndNeverGoBack() {
        Phase p = Phase.LAUNCHED;
        List<String> seen = new ArrayList<>();
        Object[][] walk = {
            {LAUNCHED, Phase.LAUNCHED}, {JOINING, Phase.LAUNCHED}, {FOR_LAUNCH, Phase.LAUNCHED},
            {LAMBDA, Phase.LAUNCHED}, {FETCH, Phase.LAUNCHED}, {EXPLAIN, Phase.LAUNCHED}, {ID_OF, Phase.LAUNCHED},
            {FILE_ARRIVALS, Phase.LAUNCHED}, {ARRIVALS, Phase.LAUNCHED},
            {SET_DEVICE, Phase.LAUNCHED}, {INIT, Phase.LAUNCHED}, {ATTACH, Phase.LAUNCHED}, {SET_DEVICE, Phase.LAUNCHED},
            {LAUNCHED, Phase.READY}, {LAUNCHED, Phase.IN_LOOP}, {CLOSING, Phase.IN_LOOP}, {LAUNCHED, Phase.CLOSING},
            {LAUNCHED, Phase.CLOSED},
        };
        for (Object[] w : walk) {
            p = Phase.next((StackTraceElement[]) w[0], p, (Phase) w[1]);
            seen.add(p.label);
        }
        assertEquals(List.of("launched", "joining", "joining", "joining", "rendezvous", "rendezvous", "id-taken",
                "id-taken", "id-taken", "set-device", "nccl-init", "nccl-init", "nccl-init", "ready", "in-loop", "closing",
                "closing", "closed"), seen);
        // rank 0 makes the id inside its rendezvous; a rendezvous never seen leaves the phase at joining until NCCL
        assertEquals(Phase.RENDEZVOUS, Phase.next(SERVE, Phase.JOINING, Phase.LAUNCHED));
        assertEquals(Phase.JOINING, Phase.next(ID_OF, Phase.JOINING, Phase.LAUNCHED));
        assertEquals(Phase.NCCL_INIT, Phase.next(INIT_CONFIG, Phase.JOINING, Phase.LAUNCHED));
        assertEquals(Phase.LAUNCHED, Phase.next(new StackTraceElement[0], Phase.LAUNCHED, Phase.LAUNCHED));
        assertEquals(List.of("launched", "joining", "rendezvous", "id-taken", "set-device", "nccl-init", "ready",
                "in-loop", "closing", "closed"), java.util.Arrays.stream(Phase.values()).map(x -> x.label)
                .collect(Collectors.toList()));
        // where the EVENT says the main thread was: nccl4j's topmost frame, not the JDK's or the harness's
        assertEquals("org.nccl4j.launch.Rendezvous.readOnClient", Phase.top(FETCH));
        assertEquals("org.nccl4j.jni.NcclNative.ncclGetUniqueId", Phase.top(SERVE));
        assertEquals("java.lang.Thread.sleep", Phase.top(LAUNCHED));
        assertEquals("an empty stack", Phase.top(new StackTraceElement[0]));
    }

    private String kinds() {
        return lines.stream().map(l -> l.split(" ")[0]).collect(Collectors.joining(" "));
    }

    /** Feeds {@code looks} to a watcher of {@code scenario} as rank 1, counting its departures. */
    private Watcher watch(Scenario scenario, AtomicInteger departed, StackTraceElement[]... looks) {
        Watcher w = new Watcher(Thread.currentThread(), 1, scenario, departed::incrementAndGet, null);
        for (StackTraceElement[] s : looks) {
            w.look(s);
        }
        return w;
    }

    @Test
    void eachStartUpScenarioLeavesAtItsPlaceOnceAndSaysWhereTheMainThreadWas() {
        AtomicInteger departed = new AtomicInteger();
        Watcher w = watch(Scenario.STARTUP_RENDEZVOUS_TERM, departed, LAUNCHED, JOINING, FOR_LAUNCH, LAMBDA);
        assertFalse(w.fired(), "the rendezvous is placed in fetch or serve, where it waits for rank 0 or the others");
        w.look(FETCH);
        w.look(FETCH);
        w.look(ID_OF);
        assertTrue(w.fired());
        assertEquals(1, departed.get());
        assertEquals("PHASE PHASE EVENT PHASE", kinds(), "joining, rendezvous, the EVENT, id-taken: " + lines);
        assertTrue(lines.get(1).matches("PHASE rank=1 t=\\d{13} rendezvous"), lines.get(1));
        assertTrue(lines.get(2).matches("EVENT rank=1 t=\\d{13} startup-rendezvous-term \\(main thread at "
                + "org\\.nccl4j\\.launch\\.Rendezvous\\.fetch; liveness join done\\)"), lines.get(2));
        assertTrue(lines.get(3).matches("PHASE rank=1 t=\\d{13} id-taken"), lines.get(3));
        assertNull(w.notPlaced());

        lines.clear();
        w = watch(Scenario.STARTUP_RENDEZVOUS_KILL, departed, JOINING, SERVE);
        assertTrue(w.fired(), "rank 0 leaves in serve");
        assertTrue(lines.get(lines.size() - 1).contains(" startup-rendezvous-kill (main thread at "
                + "org.nccl4j.launch.Rendezvous.serve; "), lines.toString());

        lines.clear();
        w = watch(Scenario.STARTUP_IDTAKEN_TERM, departed, JOINING, FETCH, FETCH);
        assertFalse(w.fired());
        w.look(ID_OF);
        assertTrue(w.fired(), "id-taken: the first look out of the rendezvous");
        assertTrue(lines.get(lines.size() - 1).matches("EVENT rank=1 t=\\d{13} startup-idtaken-term \\(main thread at "
                + "org\\.nccl4j\\.UniqueId\\.of; liveness join done\\)"), lines.toString());
        lines.clear();
        w = watch(Scenario.STARTUP_IDTAKEN_KILL, departed, FETCH, SET_DEVICE);
        assertTrue(w.fired(), "id-taken: still before NCCL, in Bootstrap.create's cudaSetDevice");
        assertTrue(lines.get(lines.size() - 1).contains("(main thread at org.nccl4j.Cuda.setDevice; "), lines.toString());
        w = watch(Scenario.STARTUP_IDTAKEN_KILL, departed, ARRIVALS);
        assertTrue(w.fired(), "id-taken: Liveness.awaitArrivals");

        lines.clear();
        w = watch(Scenario.STARTUP_INIT_EXIT, departed, FETCH, ID_OF, SET_DEVICE);
        assertFalse(w.fired());
        w.look(INIT_CONFIG);
        assertTrue(w.fired());
        assertEquals("PHASE PHASE PHASE PHASE EVENT", kinds());
        assertTrue(lines.get(4).matches("EVENT rank=1 t=\\d{13} startup-init-exit \\(main thread at "
                + "org\\.nccl4j\\.jni\\.NcclNative\\.ncclCommInitRankConfig; liveness join done\\)"), lines.get(4));
        assertEquals(6, departed.get(), "one departure per watcher, however many looks match");
    }

    @Test
    void aPlaceTheMainThreadPassedBetweenTwoLooksIsSaidNotPlaced() throws Exception {
        AtomicInteger departed = new AtomicInteger();
        Watcher w = watch(Scenario.STARTUP_INIT_TERM, departed, JOINING, SET_DEVICE);
        assertNull(w.notPlaced(), "not yet past its place");
        w.stage = Phase.READY;
        w.look(LAUNCHED);
        assertEquals("the main thread was never seen in NcclNative.ncclCommInitRank or ncclCommInitRankConfig (its "
                + "stack read every 1 ms)", w.notPlaced());
        w = watch(Scenario.STARTUP_IDTAKEN_KILL, departed, FETCH, INIT);
        assertEquals("the main thread was never seen between the rendezvous and NCCL (Liveness.awaitArrivals, "
                + "Cuda.setDevice) (its stack read every 1 ms)", w.notPlaced());
        w = watch(Scenario.STARTUP_RENDEZVOUS_KILL, departed, JOINING, SET_DEVICE);
        assertEquals("the main thread was never seen in Rendezvous.fetch or serve (its stack read every 1 ms)",
                w.notPlaced());
        // fromEnvironment returned before the watcher's next look: the main thread says that it is past the place
        w = watch(Scenario.STARTUP_INIT_KILL, departed, JOINING);
        assertNull(w.notPlaced());
        assertEquals("the main thread was never seen in NcclNative.ncclCommInitRank or ncclCommInitRankConfig (its "
                + "stack read every 1 ms)", w.passed());
        w.look(INIT);
        assertFalse(w.fired(), "nothing is placed once the main thread said it is past the place");
        assertNull(watch(Scenario.STARTUP_INIT_KILL, departed, INIT).passed(), "placed");
        assertNull(new Watcher(Thread.currentThread(), 1, null, null, null).passed(), "startup-fuzz: no place");
        assertEquals(1, departed.get(), "the one placed");
        assertEquals(List.of("PHASE", "PHASE", "PHASE", "PHASE", "PHASE", "PHASE", "PHASE", "PHASE", "PHASE", "PHASE",
                "EVENT"), List.of(kinds().split(" ")), "one EVENT line, of the one placed: " + lines);

        // in the rendezvous before this rank joined rank 0's liveness channel: not placed there (the phase model puts
        // the join first), and said so; the shell that would have sent the signal ends without sending it
        CountDownLatch joining = new CountDownLatch(1);
        Thread connect = new Thread(() -> {
            try {
                joining.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "nccl4j-liveness-connect-1");
        connect.setDaemon(true);
        connect.start();
        Process target = sleeper();
        SelfSignal signal = SelfSignal.arm("TERM", target.pid());
        try {
            assertFalse(Watcher.joined(1));
            assertTrue(Watcher.joined(2), "another rank's thread");
            w = new Watcher(Thread.currentThread(), 1, Scenario.STARTUP_RENDEZVOUS_TERM, signal::fire, signal);
            w.look(FETCH);
            assertFalse(w.fired());
            w.look(ID_OF);
            assertEquals("the main thread was in the rendezvous only while this rank had not joined rank 0's liveness "
                    + "channel yet", w.notPlaced());
        } finally {
            joining.countDown();
        }
        assertTrue(signal.shell().waitFor(5, TimeUnit.SECONDS), "the disarmed shell ends");
        assertEquals(1, signal.shell().exitValue(), "its read found the end of its input");
        assertTrue(target.isAlive(), "no signal was sent");
        connect.join(5000);
        assertTrue(Watcher.joined(1));
    }

    /** A daemon thread named {@code name} that runs until {@code end} counts down. */
    private static Thread named(String name, CountDownLatch end) {
        Thread t = new Thread(() -> {
            try {
                end.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Test
    void joinedIsSaidOnceTheThreadThatConnectsToRankZerosChannelHasEnded() throws Exception {
        Watcher w = new Watcher(Thread.currentThread(), 3, null, null, null);
        w.watchJoin();
        assertEquals(List.of(), lines, "no join begun: nothing to say");
        assertEquals(Watcher.JOIN_NONE, Watcher.joinState(3));
        CountDownLatch connected = new CountDownLatch(1);
        CountDownLatch end = new CountDownLatch(1);
        Thread connect = named("nccl4j-liveness-connect-3", connected);
        Thread ping = named("nccl4j-liveness-ping-3", end);
        try {
            assertEquals(Watcher.JOIN_UNDER_WAY, Watcher.joinState(3));
            assertFalse(Watcher.joined(3));
            w.watchJoin();
            assertEquals(List.of(), lines, "still connecting");
            connected.countDown();
            connect.join(5000);
            assertEquals(Watcher.JOIN_DONE, Watcher.joinState(3));
            assertTrue(Watcher.joined(3));
            w.watchJoin();
            w.watchJoin();
            assertEquals(1, lines.size(), lines.toString());
            assertTrue(lines.get(0).matches("JOINED rank=3 t=\\d{13}"), lines.get(0));
        } finally {
            end.countDown();
        }
        ping.join(5000);
        // rank 0 has no ping thread: its connecting thread, once seen, then gone, says it
        lines.clear();
        Watcher zero = new Watcher(Thread.currentThread(), 0, null, null, null);
        CountDownLatch zeroConnected = new CountDownLatch(1);
        Thread zeroConnect = named("nccl4j-liveness-connect-0", zeroConnected);
        zero.watchJoin();
        zeroConnected.countDown();
        zeroConnect.join(5000);
        zero.watchJoin();
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.get(0).startsWith("JOINED rank=0 t="), lines.get(0));
    }

    private Process sleeper() throws Exception {
        Process p = new ProcessBuilder("sleep", "30").start();
        started.add(p);
        return p;
    }

    @Test
    void theArmedShellSendsItsSignalAMomentAfterFire() throws Exception {
        for (String[] c : new String[][] {{"TERM", "143"}, {"KILL", "137"}}) {
            Process target = sleeper();
            SelfSignal s = SelfSignal.arm(c[0], target.pid());
            Thread.sleep(200);   // the shell waits on its input
            assertTrue(target.isAlive() && s.shell().isAlive(), c[0]);
            long t0 = System.nanoTime();
            s.fire();
            assertTrue(target.waitFor(5, TimeUnit.SECONDS), c[0]);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(Integer.parseInt(c[1]), target.exitValue(), c[0]);
            assertTrue(ms < 1000, c[0] + " took " + ms + " ms");
            assertTrue(s.shell().waitFor(5, TimeUnit.SECONDS));
            assertEquals(0, s.shell().exitValue());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SelfSignal.arm("TERM;ls", 1));
        assertEquals("signal TERM;ls is not a signal name such as TERM or KILL", e.getMessage());
    }

    /** A thread inside the stub's ncclCommInitRank (held 600 ms): the watcher leaves there, while it is inside. */
    @Test
    void onARealThreadTheInitScenarioLeavesInsideNcclsInitialization() throws Exception {
        stub.sleep(NcclFunction.ncclCommInitRank, 600);
        CountDownLatch go = new CountDownLatch(1);
        AtomicReference<Communicator> made = new AtomicReference<>();
        Thread rank = new Thread(() -> {
            try {
                go.await();
                made.set(Communicator.create(0, 1, testId(), 0));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "rank-main");
        rank.start();
        AtomicBoolean inside = new AtomicBoolean();
        AtomicInteger departed = new AtomicInteger();
        Watcher w = new Watcher(rank, 0, Scenario.STARTUP_INIT_TERM, () -> {
            departed.incrementAndGet();
            inside.set(made.get() == null && rank.isAlive());
        }, null).begin();
        Thread.sleep(20);
        go.countDown();
        rank.join(10_000);
        later(made.get());
        assertTrue(w.fired(), lines.toString());
        assertEquals(1, departed.get());
        assertTrue(inside.get(), "it left while NCCL's initialization had not returned");
        assertTrue(lines.get(0).matches("PHASE rank=0 t=\\d{13} launched"), lines.toString());
        List<String> events = lines.stream().filter(l -> l.startsWith("EVENT ")).collect(Collectors.toList());
        assertEquals(1, events.size(), lines.toString());
        assertTrue(events.get(0).matches("EVENT rank=0 t=\\d{13} startup-init-term \\(main thread at "
                + "org\\.nccl4j\\.jni\\.NcclNative\\.ncclCommInitRank; liveness join done\\)"), events.get(0));
        int init = lines.indexOf(lines.stream().filter(l -> l.endsWith(" nccl-init")).findFirst().orElseThrow());
        assertTrue(init < lines.indexOf(events.get(0)), "its PHASE line comes first: " + lines);
        assertEquals(Phase.NCCL_INIT, w.phase(), "Communicator.create, not fromEnvironment: no later phase is shown");
    }
}
