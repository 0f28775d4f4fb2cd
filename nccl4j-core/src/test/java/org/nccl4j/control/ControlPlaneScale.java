package org.nccl4j.control;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntPredicate;
import org.nccl4j.StubFixture;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.Rendezvous;

/**
 * The control plane at scale, simulated (issue 29, point 5): N ranks as threads of this one JVM, on loopback, running
 * the real {@link Rendezvous} (TCP route, with a job secret) and the real {@link Liveness} channel, with no GPU and no
 * NCCL (the id supplier returns 128 made-up bytes). Run by scripts/bench/control-plane-scale.sh, one JVM per N; prints
 * one JSON object of figures (and writes it to {@code --json FILE}).
 *
 * <p>The figures: the time until every rank has the id (from the moment every rank starts its exchange, rank 0
 * listening; max and median over ranks); the time until every rank's liveness roster is complete; rank 0's threads
 * once all joined (those of rank 0's rendezvous, its liveness server and its own rank's connection, by name); with
 * heartbeats running for {@code --window} seconds, rank 0's CPU (ThreadMXBean per thread, summed over rank 0's
 * threads), the other ranks' CPU, rank 0's allocation rate, and the JVM's heap after a GC (the whole JVM: every rank's
 * side together); then the time until one rank dropped without a goodbye is named on every other rank, the same for
 * 64 dropped at once, and the time until a departure ({@code DEPART close}) and a dump request (a departure of kind
 * failure, which makes every rank's news hook write its flight record) have reached every other rank.
 *
 * <p>In the test sources of nccl4j-core because it drives the package-private {@link Liveness}; it is no test.
 */
final class ControlPlaneScale {
    private static final JobSecret SECRET = JobSecret.of("control-plane-scale-secret-0123456789");
    private static final long MS = 1_000_000L;

    private final int n;
    private final long windowMillis;
    /** Over how long the ranks join the liveness channel (0: all at once), as a launcher starts them over time. */
    private long joinOverMillis;
    private final Map<String, Object> out = new LinkedHashMap<>();
    private final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private ControlPlaneScale(int n, long windowMillis) {
        this.n = n;
        this.windowMillis = windowMillis;
    }

    /**
     * {@code --ranks N [--window SECONDS] [--join-over SECONDS] [--json FILE]}: with {@code --join-over}, rank r
     * joins the liveness channel r/N of that time after rank 0 (as a launcher starts the ranks over time).
     *
     * @param args the arguments
     * @throws Exception when a phase fails
     */
    public static void main(String[] args) throws Exception {
        int n = 64;
        long window = 10;
        Path json = null;
        long joinOver = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--ranks" -> n = Integer.parseInt(args[++i]);
                case "--window" -> window = Long.parseLong(args[++i]);
                case "--json" -> json = Path.of(args[++i]);
                case "--join-over" -> joinOver = Long.parseLong(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (use --ranks N [--window S] [--join-over S] [--json FILE])");
            }
        }
        ((ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME))
                .setLevel(ch.qos.logback.classic.Level.ERROR);
        ControlPlaneScale run = new ControlPlaneScale(n, window * 1000);
        run.joinOverMillis = joinOver * 1000;
        run.out.put("ranks", n);
        run.out.put("join_over_s", joinOver);
        run.rendezvous();
        try {
            run.liveness();
        } catch (RuntimeException e) {   // the figures measured so far, and why the rest are missing
            run.out.put("liveness_error", "\"" + String.valueOf(e.getMessage()).replace('"', '\'') + "\"");
            e.printStackTrace();
        }
        String text = run.json();
        System.out.println(text);
        if (json != null) {
            Files.writeString(json, text + "\n");
        }
        System.exit(0);
    }


    private static Thread start(String name, Runnable r) {
        Thread t = new Thread(null, r, name, 256 * 1024);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** Every rank's exchange; rank 0 listening first, then all released at once. */
    private void rendezvous() throws Exception {
        int port = StubFixture.freePort();
        byte[] made = new byte[Rendezvous.UNIQUE_ID_BYTES];
        new java.util.Random(29).nextBytes(made);
        CountDownLatch listening = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);
        long[] done = new long[n];
        AtomicReference<Throwable> failed = new AtomicReference<>();
        AtomicLong rankZeroThreads = new AtomicLong(-1);
        List<Thread> all = new ArrayList<>();
        for (int r = 1; r < n; r++) {
            int rank = r;
            all.add(start("sim-rendezvous-" + r, () -> {
                try {
                    go.await();
                    byte[] id = Rendezvous.builder().tcp("127.0.0.1", port).rank(rank).worldSize(n).jobSecret(SECRET)
                            .timeout(Duration.ofSeconds(120)).build().exchange(() -> {
                                throw new AssertionError("only rank 0 makes the id");
                            });
                    done[rank] = System.nanoTime();
                    if (!Arrays.equals(id, made)) {
                        throw new AssertionError("rank " + rank + " got another id");
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            }));
        }
        Thread zero = start("sim-rendezvous-0", () -> {
            try {
                Rendezvous.builder().tcp("127.0.0.1", port).rank(0).worldSize(n).jobSecret(SECRET)
                        .bindAddress(InetAddress.getLoopbackAddress()).timeout(Duration.ofSeconds(120))
                        .onListening(a -> listening.countDown()).build().exchange(() -> {
                            rankZeroThreads.set(countThreads(name -> name.startsWith("sim-rendezvous-0")));
                            return made.clone();
                        });
                done[0] = System.nanoTime();
            } catch (Throwable e) {
                failed.compareAndSet(null, e);
                listening.countDown();
            }
        });
        listening.await();
        long t0 = System.nanoTime();
        go.countDown();
        zero.join();
        for (Thread t : all) {
            t.join();
        }
        if (failed.get() != null) {
            throw new IllegalStateException("the rendezvous failed", failed.get());
        }
        long[] ms = new long[n];
        for (int r = 0; r < n; r++) {
            ms[r] = (done[r] - t0) / MS;
        }
        Arrays.sort(ms);
        out.put("id_max_ms", ms[n - 1]);
        out.put("id_p50_ms", ms[n / 2]);
        out.put("rendezvous_rank0_threads", rankZeroThreads.get());
    }

    /** The liveness channel: joins, threads, CPU and heap with heartbeats, losses, departures and dump requests. */
    private void liveness() throws Exception {
        int port = StubFixture.freePort();
        Liveness served = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, n, SECRET, InetAddress.getLoopbackAddress());
        Liveness[] rank = new Liveness[n];
        long t0 = System.nanoTime();
        long deadline = t0 + 120_000 * MS;
        rank[0] = Liveness.joinLater(served, 0, "127.0.0.1", port, deadline, SECRET);
        for (int r = 1; r < n; r++) {
            long due = t0 + joinOverMillis * MS * r / n;
            while (System.nanoTime() - due < 0) {
                Thread.sleep(1);
            }
            rank[r] = Liveness.joinLater(null, r, "127.0.0.1", port, deadline, SECRET);
        }
        boolean[] gone = new boolean[n];
        try {
            long joined = until(t0 + 60_000 * MS, r -> rank[r].arrivals() >= n, rank.length, null);
            out.put("join_all_ms", (joined - t0) / MS);
        } catch (IllegalStateException e) {   // some ranks never got in: measured on those that did
            out.put("join_all_ms", null);
        }
        int outside = 0;
        for (int r = 1; r < n; r++) {
            if (!rank[r].connected()) {
                gone[r] = true;
                outside++;
            }
        }
        out.put("ranks_not_joined", outside);

        // news (the hook that writes a rank's flight record) timed per rank, for the watched line
        AtomicReference<String> watch = new AtomicReference<>("-");
        AtomicReferenceArray<Long> heard = new AtomicReferenceArray<>(n);
        for (int r = 0; r < n; r++) {
            int me = r;
            rank[r].attach(null, text -> {
                if (text.startsWith(watch.get())) {
                    heard.compareAndSet(me, null, System.nanoTime());
                }
            });
        }
        Thread.sleep(2000);   // heartbeats settle
        out.put("rank0_threads", countThreads(ControlPlaneScale::rankZeroThread));
        out.put("jvm_threads", threads.getThreadCount());
        Map<Long, long[]> before = sample();
        long w0 = System.nanoTime();
        Thread.sleep(windowMillis);
        Map<Long, long[]> after = sample();
        double seconds = (System.nanoTime() - w0) / 1e9;
        long[] zeroCpu = new long[2];
        long[] othersCpu = new long[2];
        for (Map.Entry<Long, long[]> e : after.entrySet()) {
            long[] b = before.get(e.getKey());
            if (b == null) {
                continue;
            }
            long[] into = e.getValue()[2] == 1 ? zeroCpu : othersCpu;
            into[0] += e.getValue()[0] - b[0];
            into[1] += e.getValue()[1] - b[1];
        }
        out.put("rank0_cpu_ms_per_s", Math.round(zeroCpu[0] / MS / seconds * 10) / 10.0);
        out.put("rank0_alloc_kb_per_s", Math.round(zeroCpu[1] / 1024.0 / seconds));
        out.put("other_ranks_cpu_ms_per_s", Math.round(othersCpu[0] / MS / seconds * 10) / 10.0);
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        System.gc();
        out.put("jvm_heap_used_mb", memory.getHeapMemoryUsage().getUsed() >> 20);

        // ranks whose connection rank 0 ended meanwhile (a rank starved past its heartbeat timeout on this machine)
        int dropped = 0;
        for (int r = 1; r < n; r++) {
            if (!gone[r] && rank[r].lost().stream().anyMatch(l -> l.rank() == 0)) {
                gone[r] = true;
                dropped++;
            }
        }
        out.put("ranks_dropped", dropped);

        // one rank lost
        int victim = firstAlive(gone, n / 2);
        long l0 = System.nanoTime();
        rank[victim].dropWithoutGoodbye();
        gone[victim] = true;
        long lost1 = until(l0 + 60_000 * MS, r -> gone[r] || rank[r].lost().stream().anyMatch(l -> l.rank() == victim),
                n, null);
        out.put("lost1_ms", (lost1 - l0) / MS);

        // 64 lost at once (fewer for small N: at most a quarter of the ranks)
        int many = Math.min(64, n / 4);
        List<Integer> victims = new ArrayList<>();
        for (int r = 1; victims.size() < many; r += 3) {
            if (!gone[r]) {
                victims.add(r);
            }
        }
        long m0 = System.nanoTime();
        for (int v : victims) {
            rank[v].dropWithoutGoodbye();
            gone[v] = true;
        }
        long lostMany = until(m0 + 60_000 * MS, r -> gone[r] || rank[r].lost().stream().filter(l -> victims.contains(
                l.rank())).count() == many, n, null);
        out.put("lost_many", many);
        out.put("lost_many_ms", (lostMany - m0) / MS);

        // a departure (close) and a dump request (a failure: every rank's news hook writes its flight record)
        int leaver = firstAlive(gone, n - 1);
        long d0 = System.nanoTime();
        rank[leaver].depart(Departures.Kind.CLOSE, 0, 7, "allReduce #7", null);
        long departed = until(d0 + 60_000 * MS, r -> gone[r] || r == leaver
                || rank[r].departures().of(0).containsKey(leaver), n, null);
        out.put("departure_fanout_ms", (departed - d0) / MS);
        int failer = firstAlive(gone, leaver - 1);
        watch.set("rank " + failer + " failed");
        long f0 = System.nanoTime();
        rank[failer].depart(Departures.Kind.FAILURE, 0, 7, "allReduce #7", "simulated failure");
        long dumped = until(f0 + 60_000 * MS, r -> gone[r] || r == failer || heard.get(r) != null, n, null);
        out.put("dump_fanout_ms", (dumped - f0) / MS);
        for (int r = n - 1; r >= 0; r--) {
            rank[r].close();
        }
    }

    private static int firstAlive(boolean[] gone, int from) {
        for (int r = from; r > 0; r--) {
            if (!gone[r]) {
                return r;
            }
        }
        throw new IllegalStateException("no rank left at or below " + from);
    }

    /** Polls every 2 ms until every index satisfies {@code ok}; returns when (nanoTime), or throws at the deadline. */
    private static long until(long deadline, IntPredicate ok, int count, String what) throws InterruptedException {
        int from = 0;
        while (true) {
            while (from < count && ok.test(from)) {
                from++;
            }
            long now = System.nanoTime();
            if (from == count) {
                return now;
            }
            if (now - deadline > 0) {
                throw new IllegalStateException("timed out" + (what == null ? "" : " on " + what) + " at index "
                        + from);
            }
            Thread.sleep(2);
        }
    }

    /** Rank 0's threads: its liveness server's, its pings, and its own rank's connection (launch rank 0). */
    static boolean rankZeroThread(String name) {
        return name.equals("nccl4j-liveness-server") || name.equals("nccl4j-liveness-ping")
                || name.startsWith("nccl4j-liveness-peer") || name.equals("nccl4j-liveness-0")
                || name.equals("nccl4j-liveness-connect-0") || name.equals("nccl4j-liveness-linger-0");
    }

    private static long countThreads(java.util.function.Predicate<String> which) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && which.test(t.getName()))
                .count();
    }

    /** Per live thread: CPU ns, allocated bytes, 1 when rank 0's. */
    private Map<Long, long[]> sample() {
        Map<Long, long[]> m = new java.util.HashMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            long id = t.getId();
            long cpu = threads.getThreadCpuTime(id);
            long alloc = threads.getThreadAllocatedBytes(id);
            if (cpu >= 0) {
                m.put(id, new long[] {cpu, alloc, rankZeroThread(t.getName()) ? 1 : 0});
            }
        }
        return m;
    }

    private String json() {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, Object> e : out.entrySet()) {
            sb.append(sb.length() > 1 ? ", " : "").append('"').append(e.getKey()).append("\": ").append(e.getValue());
        }
        return sb.append('}').toString();
    }
}
