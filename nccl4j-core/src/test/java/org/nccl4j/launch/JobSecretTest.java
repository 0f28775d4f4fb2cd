package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The job's secret: where it comes from, and a challenge-response that a wrong secret or a replay cannot pass. */
class JobSecretTest {
    @TempDir
    Path dir;

    @Test
    void theRightSecretProvesItselfAndAWrongOneOrAReplayDoesNot() {
        JobSecret s = JobSecret.of("0123456789abcdef0123");
        String server = JobSecret.nonce();
        String client = JobSecret.nonce();
        String proof = s.prove("liveness", server, client, "client");
        assertTrue(s.verify("liveness", server, client, "client", proof));
        assertFalse(JobSecret.of("another secret of 20 c").verify("liveness", server, client, "client", proof),
                "a wrong secret");
        assertFalse(s.verify("liveness", JobSecret.nonce(), client, "client", proof), "replayed on a new challenge");
        assertFalse(s.verify("liveness", server, client, "server", proof), "a client's proof is not a server's");
        assertFalse(s.verify("rendezvous", server, client, "client", proof), "nor one for another port");
        assertFalse(s.verify("liveness", server, client, "client", null));
        assertEquals(64, proof.length());
        assertNotEquals(server, client);
        assertEquals(64, JobSecret.nonce().length());
        assertFalse(s.toString().contains("0123456789"), "the secret is never printed");
    }

    @Test
    void itComesFromTheVariableElseTheFileElseNowhere() throws Exception {
        assertNull(JobSecret.from(Map.of()));
        Path f = dir.resolve("secret");
        Files.writeString(f, "from-a-mounted-secret-file\n");
        JobSecret a = JobSecret.from(Map.of(JobSecret.FILE_VARIABLE, f.toString()));
        JobSecret b = JobSecret.of("from-a-mounted-secret-file");
        assertTrue(b.verify("x", "1", "2", "client", a.prove("x", "1", "2", "client")), "the file's line, stripped");
        JobSecret c = JobSecret.from(Map.of(JobSecret.VARIABLE, "the-variable-wins-over-file",
                JobSecret.FILE_VARIABLE, f.toString()));
        assertFalse(b.verify("x", "1", "2", "client", c.prove("x", "1", "2", "client")));
    }

    @Test
    void aShortSecretOrAnUnreadableFileIsRefusedNamingTheVariable() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> JobSecret.from(Map.of(JobSecret.VARIABLE, "short")));
        assertTrue(e.getMessage().startsWith("NCCL4J_JOB_SECRET must hold at least 16 characters (got 5)"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> JobSecret.from(Map.of(JobSecret.FILE_VARIABLE, dir.resolve("missing").toString())));
        assertTrue(e.getMessage().startsWith("NCCL4J_JOB_SECRET_FILE=" + dir.resolve("missing") + " cannot be read"),
                e.getMessage());
    }
}
