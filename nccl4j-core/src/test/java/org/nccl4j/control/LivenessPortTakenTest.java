package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.BindException;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** Rank 0 that cannot serve the liveness channel because another process holds its port says which and the fix. */
class LivenessPortTakenTest {
    @Test
    void theLivenessPortTakenIsNamedWithWhatItIsForAndTheFix() throws Exception {
        try (ServerSocket other = new ServerSocket(0)) {   // another job's liveness channel, on every address
            int port = other.getLocalPort();
            BindException e = assertThrows(BindException.class, () -> Liveness.serve(port));
            String m = e.getMessage();
            assertTrue(m.startsWith("port " + port + ", the liveness channel (MASTER_PORT + 50, or"
                    + " NCCL4J_LIVENESS_PORT), is taken on this host ("), m);
            assertTrue(m.endsWith("; by another job whose rank 0 shares this node, or another process): give this job"
                    + " another MASTER_PORT (it moves all of nccl4j's ports, docs/ports.md), or end the process holding"
                    + " it"), m);
            assertEquals(BindException.class, e.getCause().getClass());
        }
    }
}
