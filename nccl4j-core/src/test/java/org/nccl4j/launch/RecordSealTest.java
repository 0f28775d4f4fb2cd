package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The records after a handshake: sealed by one side, opened by the other, and nothing else opens. */
class RecordSealTest {
    private static final JobSecret SECRET = JobSecret.of("0123456789abcdef-the-job");
    private static final String SN = JobSecret.nonce();
    private static final String CN = JobSecret.nonce();

    private static RecordSeal server() {
        return RecordSeal.of(SECRET, "liveness", SN, CN, true);
    }

    private static RecordSeal client() {
        return RecordSeal.of(SECRET, "liveness", SN, CN, false);
    }

    @Test
    void linesOpenInOrderOnTheOtherSideOnly() throws Exception {
        RecordSeal s = server();
        RecordSeal c = client();
        String a = c.seal("PING 0 17\n");
        assertTrue(a.endsWith("\n") && a.startsWith("PING 0 17 ~"), a);
        assertEquals("PING 0 17 ~".length() + 32 + 1, a.length());
        String b = c.seal("BYE");
        assertEquals("PING 0 17", s.open(a.substring(0, a.length() - 1)));
        assertEquals("BYE", s.open(b));
        assertEquals(2, c.sent());
        assertEquals(2, s.received());
        // the server's own direction has its own key: a client line does not open as a server line
        RecordSeal c2 = client();
        RecordSeal.Broken e = assertThrows(RecordSeal.Broken.class, () -> c2.open(client().seal("PING")));
        assertEquals(0, e.record());
        assertTrue(e.getMessage().contains("record #0 after the handshake failed its MAC"), e.getMessage());
    }

    @Test
    void aReplayedReorderedOrDroppedLineFails() throws Exception {
        RecordSeal c = client();
        String first = c.seal("PING 0 1");
        String second = c.seal("PING 0 2");
        String third = c.seal("PING 0 3");
        RecordSeal s = server();
        assertEquals("PING 0 1", s.open(first));
        assertThrows(RecordSeal.Broken.class, () -> s.open(first), "replayed");
        RecordSeal s2 = server();
        assertThrows(RecordSeal.Broken.class, () -> s2.open(second), "reordered");
        RecordSeal s3 = server();
        s3.open(first);
        RecordSeal.Broken dropped = assertThrows(RecordSeal.Broken.class, () -> s3.open(third), "one dropped");
        assertEquals(1, dropped.record());
    }

    @Test
    void anAlteredOrUnsealedLineFails() {
        String sealed = client().seal("LOST 2 host 77 ready gone");
        String altered = sealed.replace("LOST 2", "LOST 1");
        assertThrows(RecordSeal.Broken.class, () -> server().open(altered));
        RecordSeal.Broken none = assertThrows(RecordSeal.Broken.class, () -> server().open("LOST 2 host 77"));
        assertTrue(none.getMessage().contains("carries no MAC"), none.getMessage());
        assertThrows(RecordSeal.Broken.class, () -> server().open("PING ~zz" + "0".repeat(30)));
        assertThrows(RecordSeal.Broken.class, () -> server().open((String) null));
    }

    @Test
    void anotherConnectionsOrAnotherJobsKeysDoNotOpen() {
        String sealed = client().seal("PING");
        assertThrows(RecordSeal.Broken.class, () -> RecordSeal.of(SECRET, "liveness", JobSecret.nonce(), CN, true)
                .open(sealed), "other nonces");
        assertThrows(RecordSeal.Broken.class, () -> RecordSeal.of(SECRET, "rendezvous", SN, CN, true)
                .open(sealed), "other purpose");
        assertThrows(RecordSeal.Broken.class, () -> RecordSeal.of(JobSecret.of("another-job-secret-16"), "liveness",
                SN, CN, true).open(sealed), "other secret");
    }

    @Test
    void framesCarryTheirMacAtTheEnd() throws Exception {
        byte[] id = new byte[128];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) i;
        }
        RecordSeal s = server();
        byte[] sealed = s.sealFrame(id);
        assertEquals(128 + RecordSeal.MAC_BYTES, sealed.length);
        assertArrayEquals(id, client().openFrame(sealed));
        byte[] flipped = sealed.clone();
        flipped[5] ^= 1;
        assertThrows(RecordSeal.Broken.class, () -> client().openFrame(flipped));
        assertThrows(RecordSeal.Broken.class, () -> client().openFrame(new byte[3]));
        assertFalse(server().toString().contains(new String(id, StandardCharsets.ISO_8859_1)));
    }

    @Test
    void missingArgumentsAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RecordSeal.of(null, "liveness", SN, CN, true));
        assertTrue(e.getMessage().contains("no secret"), e.getMessage());
    }
}
