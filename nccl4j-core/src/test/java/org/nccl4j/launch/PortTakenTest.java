package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A port of the job that another process holds (two jobs whose rank 0 share a node): the rank that cannot bind it
 * says which port, what it is for and the fix (another MASTER_PORT, or end the holder). docs/ports.md lists them.
 */
class PortTakenTest {
    private static final String FIX = "give this job another MASTER_PORT (it moves all of nccl4j's ports,"
            + " docs/ports.md), or end the process holding it";

    @Test
    void rankZeroNamesTheRendezvousPortAndTheFix() throws Exception {
        try (ServerSocket other = new ServerSocket(0)) {   // the other job's rank 0, on every address
            int port = other.getLocalPort();
            Rendezvous r = Rendezvous.builder().rank(0).worldSize(2).environment(Map.of())
                    .tcp("127.0.0.1", port).bindAddress(InetAddress.getLoopbackAddress())
                    .timeout(Duration.ofSeconds(20)).build();
            RendezvousException e = assertThrows(RendezvousException.class, () -> r.exchange(() -> new byte[128]));
            String m = e.getMessage();
            assertTrue(m.startsWith("rank 0 cannot listen on 127.0.0.1:" + port + " for the rendezvous: "), m);
            assertTrue(m.endsWith("; port " + port + " is taken on this host (by another job whose rank 0 shares"
                    + " this node, or another process): " + FIX), m);
            assertTrue(e.getCause() instanceof BindException, String.valueOf(e.getCause()));
        }
    }

    @Test
    void aRollCallPortTakenIsNamedWithTheFix() throws Exception {
        try (ServerSocket other = new ServerSocket(0)) {
            int port = other.getLocalPort();
            IOException e = assertThrows(IOException.class, () -> RollCall.answer(3, port, null));
            String m = e.getMessage();
            assertTrue(m.startsWith("roll call: rank 3 cannot answer on port " + port + " (MASTER_PORT + 200 + launch"
                    + " rank): "), m);
            assertTrue(m.endsWith("; another job or process on this host holds it: " + FIX), m);
            assertEquals(BindException.class, e.getCause().getClass());
        }
    }
}
