package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Once the process's exit has waited for the NCCL teardowns under way, a teardown that a thread begins afterwards (a
 * {@code close()} on the main thread while the C runtime's exit handlers are about to run) is skipped, not run, and
 * an initialization is not started.
 */
class ExitGateTest extends StubFixture {
    @AfterEach
    void callsAgain() {
        CommHealth.callsAgainForTests();
    }

    @Test
    void aTeardownRunsCountedUntilTheExitEndsNcclsCallsThenIsSkipped() {
        AtomicInteger calls = new AtomicInteger();
        int[] seenUnderWay = new int[1];
        assertEquals(7, CommHealth.tearDown(() -> {
            calls.incrementAndGet();
            seenUnderWay[0] = CommHealth.teardownsUnderWay();
            return 7;
        }));
        assertEquals(1, calls.get());
        assertEquals(1, seenUnderWay[0], "counted while it runs: the exit waits for it");
        assertEquals(0, CommHealth.teardownsUnderWay());
        assertFalse(CommHealth.callsEnded());

        StartupGuard.AT_EXIT.endCalls();   // what the exit does after its wait
        assertTrue(CommHealth.callsEnded());
        assertEquals(0, CommHealth.tearDown(() -> {
            calls.incrementAndGet();
            return 7;
        }), "skipped: ncclSuccess, nothing called");
        assertEquals(1, calls.get());
        assertEquals(0, CommHealth.teardownsUnderWay(), "not left counted: the exit does not wait for it");
    }

    @Test
    void anInitializationBegunAfterTheExitEndedNcclsCallsIsNotStarted() {
        StartupGuard.AT_EXIT.endCalls();
        mark();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Communicator.fromEnvironment());
        assertEquals("rank 0 of 1: the process is exiting; NCCL's initialization was not started", e.getMessage());
        assertEquals(0, StartupGuard.initsUnderWay(), "not left counted: the exit does not wait for it");
        assertFalse(newCallNames().contains("ncclCommInitRank"), newCallNames().toString());
    }
}
