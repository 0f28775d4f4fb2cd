package org.nccl4j;

import org.nccl4j.control.Liveness;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * What a communicator is made of, all of it given to its constructor, so that nothing is set on a communicator
 * after it is made: NCCL's handle and its answers (rank, size, device), whether NCCL calls block, the watch
 * settings, the configuration remembered for {@link Communicator#reform} and {@link Communicator#recover} (null:
 * NCCL's defaults), whether the ledger fingerprints its collectives ({@link CommConfig.Builder#fingerprint}), how many
 * recoveries led to it, and the liveness channel that serves it (null: none). {@link Bootstrap} and {@link Recovery}
 * build one with {@link #of} and the {@code with} methods, then {@link Communicator#adopt} it.
 */
record CommParts(long handle, int rank, int size, int device, boolean blocking, WatchSettings settings,
        CommConfig config, boolean fingerprinted, int generation, Liveness channel) {
    /**
     * The parts of the communicator {@code handle} that NCCL made: its rank, size and device asked of NCCL
     * ({@code device} stands when NCCL does not say); no configuration remembered, fingerprinted, no recovery
     * behind it, no channel. If a query fails, aborts the communicator rather than leaving it alive with no
     * owner, and throws.
     */
    static CommParts of(long handle, int device, boolean blocking, WatchSettings settings) {
        try {
            return query(handle, device, blocking, settings);
        } catch (RuntimeException | Error e) {
            NcclNative.ncclCommAbort(handle);
            throw e;
        }
    }

    /** As {@link #of}, without the abort on failure: for {@link Bootstrap#initAll}, which aborts them all. */
    static CommParts query(long handle, int device, boolean blocking, WatchSettings settings) {
        int[] out = new int[1];
        Errors.check(NcclNative.ncclCommUserRank(handle, out), NcclFunction.ncclCommUserRank, null);
        int rank = out[0];
        Errors.check(NcclNative.ncclCommCount(handle, out), NcclFunction.ncclCommCount, null);
        int size = out[0];
        int dev = NcclNative.ncclCommCuDevice(handle, out) == 0 ? out[0] : device;
        return new CommParts(handle, rank, size, dev, blocking, settings, null, true, 0, null);
    }

    /** Made with {@code config} (null: NCCL's defaults), whose fingerprint setting the ledger follows. */
    CommParts withConfig(CommConfig config) {
        boolean fingerprint = config == null || !Boolean.FALSE.equals(config.fingerprint());
        return new CommParts(handle, rank, size, device, blocking, settings, config, fingerprint, generation, channel);
    }

    /** Made by a recovery: remembering {@code config}, {@code generation} the one after its parent's. */
    CommParts withRecovery(CommConfig config, int generation) {
        return new CommParts(handle, rank, size, device, blocking, settings, config, fingerprinted, generation,
                channel);
    }

    /** Served by the liveness channel {@code channel} from the moment it is made. */
    CommParts withChannel(Liveness channel) {
        return new CommParts(handle, rank, size, device, blocking, settings, config, fingerprinted, generation,
                channel);
    }
}

