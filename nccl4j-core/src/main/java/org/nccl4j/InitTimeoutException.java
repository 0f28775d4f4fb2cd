package org.nccl4j;

import java.time.Duration;
import java.util.List;

/**
 * Making a communicator did not finish by its deadline ({@link CommConfig.Builder#initTimeout},
 * {@code NCCL4J_INIT_TIMEOUT}, 5 minutes by default): a rank never started, died while joining, or cannot reach the
 * others. nccl4j asked NCCL to make it without blocking ({@code ncclCommInitRankConfig} with {@code blocking = 0}),
 * polled {@code ncclCommGetAsyncError}, and at the deadline aborted what NCCL had half made
 * ({@code ncclCommAbort}): nothing is left waiting. The message names this rank, what was waited for and, where
 * the liveness channel knows who said hello, the ranks that never arrived; e.g.
 * {@code "rank 1 of 4: ncclCommInitRankConfig did not finish within 30 s: ranks [3] never arrived (joined: 0 (node1,
 * pid 811), 1 (node1, pid 812), 2 (node2, pid 90)); start them, or check that they reach node1:29550"}.
 */
public class InitTimeoutException extends NcclException {
    private static final long serialVersionUID = 1L;
    /** {@code ncclInProgress}: the call was still in progress at the deadline. */
    private static final int IN_PROGRESS = 7;

    private final transient List<Integer> missingRanks;
    private final Duration timeout;

    InitTimeoutException(String message, String operation, int rank, List<Integer> missingRanks, Duration timeout) {
        super(message, operation, IN_PROGRESS, null, rank, null);
        this.missingRanks = List.copyOf(missingRanks);
        this.timeout = timeout;
    }

    /**
     * The ranks that never arrived, when known (the liveness channel's roster); empty when not known.
     *
     * @return the ranks, sorted
     */
    public List<Integer> missingRanks() {
        return missingRanks;
    }

    /**
     * The deadline that passed.
     *
     * @return how long it waited
     */
    public Duration timeout() {
        return timeout;
    }
}
