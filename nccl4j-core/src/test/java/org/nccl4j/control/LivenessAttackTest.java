package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.StubFixture;
import org.nccl4j.launch.AttackScript;
import org.nccl4j.launch.JobSecret;

/**
 * scripts/bench/ports_attack.py's running-job attacks on a liveness channel served here (3 ranks, the job's secret):
 * every attack is refused with at most one WARN line, and the ranks stay joined with nothing lost. The same script
 * runs on the GPU machine against real jobs (scripts/ports-attack.sh); this checks the script and the channel together
 * on every CPU build.
 */
class LivenessAttackTest {
    private static final JobSecret SECRET = JobSecret.of("liveness-attack-secret-0123456789");

    @Test
    void everyAttackIsRefusedWithAtMostOneWarnLineAndTheRanksStayJoined(@TempDir Path dir) throws Exception {
        AttackScript.python();
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path log = dir.resolve("job.log");
        Path capture = dir.resolve("capture.jsonl");
        List<AutoCloseable> open = new ArrayList<>();
        try (AttackScript.FileLog l = new AttackScript.FileLog(Liveness.class, log)) {
            Liveness served = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, 3, SECRET, null)
                    .helloDeadline(Duration.ofMillis(1500)).refusalQuiet(Duration.ofMillis(300));
            Liveness r0 = Liveness.join(served, 0, "127.0.0.1", port);
            open.add(r0);
            AttackScript.Relay relay = new AttackScript.Relay(port, capture);   // rank 1's bytes are recorded
            open.add(relay);
            Liveness r1 = Liveness.join(null, 1, "127.0.0.1", relay.port(), SECRET);
            open.add(r1);
            Liveness r2 = Liveness.join(null, 2, "127.0.0.1", port, SECRET);
            open.add(r2);
            StubFixture.within(5000, () -> r0.roster().size() == 3 ? true : null, "every rank joined");

            List<Map<String, Object>> rows = AttackScript.attack(List.of("--phase", "running", "--port",
                    String.valueOf(port - 50), "--size", "3", "--capture", capture.toString(), "--log", log.toString(),
                    "--settle", "0.6", "--hold-seconds", "3", "--connections", "200"));

            List<String> names = rows.stream().map(r -> (String) r.get("attack")).toList();
            assertEquals(List.of("impostor", "lines LOST", "lines LEFT", "lines JOINED", "long-line", "random",
                    "wrong-secret", "replay", "hold", "log-flood", "after-start"), names);
            for (Map<String, Object> r : rows) {
                String name = (String) r.get("attack");
                long warns = (Long) r.get("warn_lines");
                String outcome = (String) r.get("outcome");
                if (name.equals("log-flood")) {   // within the burst of the attacks before it: at most one line
                    assertTrue(warns <= 1, "at most one WARN line: " + r);
                    assertTrue(outcome.startsWith("took ") && outcome.endsWith("closed"), r.toString());
                    continue;
                }
                if (name.equals("after-start")) {   // nothing serves the rendezvous port here
                    assertEquals(0, warns, r.toString());
                    assertTrue(outcome.startsWith("connection refused"), r.toString());
                    continue;
                }
                assertEquals(1, warns, "one WARN line: " + r);
                assertTrue(((List<?>) r.get("warns")).get(0).toString().startsWith("WARN  Liveness - nccl4j liveness:"),
                        r.toString());
                assertFalse(outcome.startsWith("attacker:") || outcome.startsWith("not run"), r.toString());
            }
            assertTrue(warn(rows, "impostor").contains("it did not authenticate (sent 'HELLO 1 intruder 4242'"),
                    warn(rows, "impostor"));
            assertTrue(warn(rows, "lines LOST").contains("sent 'LOST 1 intruder 4242'"), warn(rows, "lines LOST"));
            assertTrue(warn(rows, "long-line").contains("a line longer than 512 bytes"), warn(rows, "long-line"));
            assertTrue(warn(rows, "wrong-secret").contains("its AUTH proof is wrong"), warn(rows, "wrong-secret"));
            assertTrue(warn(rows, "replay").contains("its AUTH proof is wrong"), warn(rows, "replay"));
            // a wrong proof is told (DENIED: the rank stops trying) and closed
            assertEquals("answered 'DENIED'; closed", outcome(rows, "replay"));
            assertEquals("answered 'DENIED'; closed", outcome(rows, "wrong-secret"));
            assertTrue(warn(rows, "hold").contains("connections have not said hello yet"), warn(rows, "hold"));
            assertTrue(outcome(rows, "hold").matches("rank 0 closed (\\d+) .*"), outcome(rows, "hold"));

            Thread.sleep(1500);   // the held connections' deadlines have passed: nothing more said at WARN
            long flood = rows.stream().filter(r -> r.get("attack").equals("log-flood"))
                    .mapToLong(r -> (Long) r.get("warn_lines")).sum();
            assertEquals(9 + flood, java.nio.file.Files.readAllLines(log).stream().filter(x -> x.startsWith("WARN")).count(),
                    java.nio.file.Files.readString(log));
            assertEquals(3, r0.roster().size(), r0.roster().toString());
            assertEquals(ProcessHandle.current().pid(), r0.roster().get(1).pid(), "the real rank 1");
            assertFalse(r0.anyLost() || r1.anyLost() || r2.anyLost(), "nobody lost");
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                open.get(i).close();
            }
        }
    }

    private static String warn(List<Map<String, Object>> rows, String attack) {
        return rows.stream().filter(r -> r.get("attack").equals(attack)).map(r -> ((List<?>) r.get("warns")).get(0)
                .toString()).findFirst().orElseThrow();
    }

    private static String outcome(List<Map<String, Object>> rows, String attack) {
        return rows.stream().filter(r -> r.get("attack").equals(attack)).map(r -> (String) r.get("outcome"))
                .findFirst().orElseThrow();
    }
}
