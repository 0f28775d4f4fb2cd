package org.nccl4j;

import org.nccl4j.control.Liveness;
import org.nccl4j.control.RankProcess;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.Rendezvous;

/**
 * The communicators made from another, and going on after a failure or a change of ranks:
 * {@link Communicator#split}, {@link Communicator#shrink}, {@link Communicator#reform}, {@link Communicator#recover}
 * (which of the two, and the remaining ranks' rendezvous), {@link Communicator#revoke} and
 * {@link Communicator#grow}/{@link Communicator#join}, with the {@link #child} that split, shrink and grow adopt.
 * Communicator's public methods delegate here, with the parent's {@link CommHealth} and the configuration it was made
 * with ({@code made}, null: NCCL's defaults); their Javadoc says what each does. What is made here is the
 * {@link CommParts} of a communicator, whole (its recovery's generation and the liveness channel it takes over among
 * them), which the Communicator adopts; null where NCCL made none.
 */
final class Recovery {
    /** {@code NCCL_SHRINK_DEFAULT}. */
    private static final int SHRINK_DEFAULT = 0;
    /** {@code NCCL_SHRINK_ABORT}: abort the parent's pending operations first. */
    private static final int SHRINK_ABORT = 1;
    /** {@code NCCL_SPLIT_NOCOLOR}: the rank takes no part in the split. */
    static final int NO_COLOR = -1;

    private Recovery() {
    }

    static CommParts split(CommHealth c, CommConfig made, int color, int key, CommConfig config) {
        return onParent(c, false, () -> {
            if (color < NO_COLOR) {
                throw Errors.argument("color must be >= 0 or NO_COLOR (-1), got " + color);
            }
            if (config != null) {
                config.requireSupportedBy(NcclLibrary.load());
            }
            long[] out = new long[1];
            long handle = c.handleUnchecked();
            int rc = config == null
                    ? NcclNative.ncclCommSplit(handle, color, key, out, null, null, null)
                    : NcclNative.ncclCommSplit(handle, color, key, out, config.ints(), config.netName(),
                            config.commName());
            return child(c, made, rc, out, config, NcclFunction.ncclCommSplit);
        });
    }

    /**
     * {@code body}, which calls NCCL on {@code c}'s handle (split, shrink, grow, revoke, the id of a grow) and waits
     * for what that made, entered as a collective's enqueue is: a close or abort of {@code c} on another thread waits
     * for it to be over (up to the 2 s of {@link CommHealth#awaitCallsLeft}), or it sees that close first and throws
     * its {@code IllegalStateException}, so that NCCL never works on a communicator freed under it. With
     * {@code keptToo}, a communicator failed and kept for recovery ({@link FailurePolicy#RECOVER}) is taken too.
     */
    private static <T> T onParent(CommHealth c, boolean keptToo, java.util.function.Supplier<T> body) {
        c.enterCall();   // before the check: a close either sees this call or this call sees the close
        try {
            if (keptToo) {
                ensureOpenOrKept(c);
            } else {
                ensureOpen(c);
            }
            return body.get();
        } finally {
            c.leaveCall();
        }
    }

    /** Throws unless {@code c} is open (neither closing nor closed). */
    private static void ensureOpen(CommHealth c) {
        if (c.refusing) {
            throw c.closedError();
        }
    }

    /**
     * The communicator that split, shrink or grow made from {@code c}: waits while a nonblocking one is in progress;
     * on failure aborts what NCCL half made and throws; its parts, with {@code config}'s watchdog settings, or
     * {@code c}'s, remembering {@code config} or else {@code c}'s ({@code made}). Null when NCCL made none
     * ({@link #NO_COLOR}).
     */
    private static CommParts child(CommHealth c, CommConfig made, int status, long[] out, CommConfig config,
            NcclFunction fn) {
        boolean childBlocking = config == null || config.ints()[NcclNative.CFG_BLOCKING] == NcclNative.CONFIG_UNDEF_INT
                ? c.isBlocking() : config.ints()[NcclNative.CFG_BLOCKING] != 0;
        java.time.Duration timeout = CommConfig.initTimeout(config != null ? config : made);
        long handle = InitDeadline.finished(status, out, fn, c, new InitDeadline(timeout, c.rank, c.size, null));
        if (handle == 0) {
            return null;
        }
        WatchSettings childSettings = config == null ? c.settings
                : CommConfig.watchdogSettings(config, WatchdogConfig.fromEnvironment());
        // NCCL gives a child made without a config its parent's: so does nccl4j (the settings a later reform or
        // recovery of the child remembers, and whether its collectives are fingerprinted)
        return CommParts.of(handle, c.device, childBlocking, childSettings).withConfig(config != null ? config : made);
    }

    /**
     * Throws unless {@code c} is open (neither closing nor closed), or failed and kept for recovery
     * ({@link FailurePolicy#RECOVER}) and not being closed.
     */
    private static void ensureOpenOrKept(CommHealth c) {
        if ((c.closed || c.refusing) && !c.kept) {
            throw c.closedError();
        }
    }

    /** Throws unless the loaded NCCL has {@code fn}, which {@code api} needs. */
    private static void requireFunction(NcclFunction fn, String api) {
        NcclLibrary library = NcclLibrary.load();
        if (!library.has(fn)) {
            throw Errors.unsupported(api, fn, library);
        }
    }

    static CommParts shrink(CommHealth c, CommConfig made, CommConfig config, int... excludedRanks) {
        return onParent(c, true, () -> {
            checkExcluded(c, excludedRanks);
            requireFunction(NcclFunction.ncclCommShrink, "Communicator.shrink");
            if (config != null) {
                config.requireSupportedBy(NcclLibrary.load());
            }
            int flags = c.failure != null || reportedBroken(c) ? SHRINK_ABORT : SHRINK_DEFAULT;
            long[] out = new long[1];
            int[] excluded = excludedRanks.clone();
            long handle = c.handleUnchecked();
            int rc = config == null
                    ? NcclNative.ncclCommShrink(handle, excluded, excluded.length, out, null, null, null, flags)
                    : NcclNative.ncclCommShrink(handle, excluded, excluded.length, out, config.ints(),
                            config.netName(), config.commName(), flags);
            return child(c, made, rc, out, config, NcclFunction.ncclCommShrink);
        });
    }

    static CommParts reform(CommHealth c, CommConfig made, Rendezvous.Builder route, CommConfig config,
            int... excludedRanks) {
        ensureOpenOrKept(c);
        checkExcluded(c, excludedRanks);
        if (route == null) {
            throw Errors.nullArgument("route");
        }
        int newRank = rankAfterShrink(c.rank, excludedRanks);
        int newSize = c.size - excludedRanks.length;
        UniqueId id = newSize == 1 ? UniqueId.generate() : UniqueId.of(route.rank(newRank).worldSize(newSize).build()
                .exchange(() -> UniqueId.generate().toBytes()));
        CommConfig kept = config != null ? config : made;
        return Bootstrap.create(newRank, newSize, id, c.device, kept).withRecovery(kept, c.generation + 1);
    }

    static CommParts recover(CommHealth c, CommConfig made, CommConfig config, int... excludedRanks) {
        Liveness told = c.liveness;
        if (told != null) {
            told.phase(RankPhase.RECOVERING);   // a loss during it is named so everywhere
        }
        CommParts parts;
        try {
            parts = recover0(c, made, config, excludedRanks);
        } finally {
            if (told != null) {
                told.phase(RankPhase.READY);
            }
        }
        Liveness l = c.detachChannel();
        if (l != null) {   // the channel goes on with the new communicator, its ranks renumbered
            l.renumber(excludedRanks);
            parts = parts.withChannel(l);
        }
        return parts;
    }

    private static CommParts recover0(CommHealth c, CommConfig made, CommConfig config, int... excludedRanks) {
        NcclLibrary library = NcclLibrary.load();
        boolean broken = c.failure != null || c.refusing || onParent(c, true, () -> reportedBroken(c));
        if (library.has(NcclFunction.ncclCommShrink) && (!broken || library.has(NcclFunction.ncclCommRevoke))) {
            try {
                return shrink(c, made, config, excludedRanks).withRecovery(config != null ? config : made,
                        c.generation + 1);
            } catch (NcclException e) {
                if (e.result() != NcclResult.REMOTE_ERROR) {
                    throw e;
                }
                CommHealth.COMMUNICATOR_LOG.warn("nccl4j: ncclCommShrink refused to "
                        + "shrink rank {} of {} after a lost peer ({}); forming the remaining ranks' communicator "
                        + "afresh",
                        c.rank, c.size, e.ncclName());
            }
        }
        return reform(c, made, recoveryRoute(c, c.generation + 1, excludedRanks), config, excludedRanks);
    }

    /**
     * The rendezvous of the remaining ranks: the file, or TCP served by the lowest remaining rank, on its host as
     * the liveness channel's roster names it when that is not the launch's rank 0 host (rank 0 lost), else on
     * {@code MASTER_ADDR} (or {@code NCCL_COMM_ID}'s host).
     */
    private static Rendezvous.Builder recoveryRoute(CommHealth c, int n, int[] excludedRanks) {
        String file = NcclNative.getenv(Rendezvous.FILE_VARIABLE);
        if (file != null && !file.isBlank()) {
            return Rendezvous.builder().file(java.nio.file.Path.of(file + ".recovery" + n));
        }
        String[] master = LaunchInfo.rankZeroAddress();
        String host = master == null ? null : master[0];
        int port = master == null ? -1 : LaunchInfo.portNumber(master[1]);
        if (host == null || host.isBlank() || port < 0) {
            throw new IllegalStateException("Communicator.recover needs a rendezvous for the remaining ranks and none "
                    + "is set: set NCCL4J_RENDEZVOUS_FILE (a shared file) or MASTER_ADDR and MASTER_PORT (as "
                    + "scripts/nccl4j-run and torchrun do), or call reform with a route of your own");
        }
        Liveness l = c.liveness;
        if (l != null) {
            int lowest = 0;
            while (contains(excludedRanks, lowest)) {
                lowest++;
            }
            RankProcess root = l.roster().get(l.launchRank(lowest));
            RankProcess first = l.roster().get(0);
            if (root != null && first != null && root.host() != null && !root.host().equals(first.host())) {
                host = root.host();   // the launch's rank 0 host is not the new root's
            }
        }
        return Rendezvous.builder().tcp(host.trim(), port + 100 + n);
    }

    private static boolean contains(int[] values, int v) {
        for (int x : values) {
            if (x == v) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code ncclCommGetAsyncError} reports an error (not success, not in progress); false if it fails. */
    private static boolean reportedBroken(CommHealth c) {
        int[] state = new int[1];
        return NcclNative.ncclCommGetAsyncError(c.handleUnchecked(), state) == Errors.SUCCESS
                && Errors.isFailure(state[0]);
    }

    private static void checkExcluded(CommHealth c, int[] excluded) {
        if (excluded == null || excluded.length == 0) {
            throw Errors.argument("excludedRanks must name at least one rank to leave out, got none");
        }
        int size = c.size;
        for (int i = 0; i < excluded.length; i++) {
            int r = excluded[i];
            if (r < 0 || r >= size) {
                throw Errors.argument("excludedRanks[" + i + "] = " + r + " is not a rank of this communicator (0.."
                        + (size - 1) + ")");
            }
            if (r == c.rank) {
                throw Errors.argument("excludedRanks[" + i + "] = " + r + " is this rank: a rank cannot shrink itself "
                        + "out; the ranks that leave do not call shrink (they close or abort their communicator)");
            }
            for (int j = 0; j < i; j++) {
                if (excluded[j] == r) {
                    throw Errors.argument("excludedRanks names rank " + r + " twice (at " + j + " and " + i + ")");
                }
            }
        }
    }

    static int rankAfterShrink(int rank, int... excludedRanks) {
        if (rank < 0) {
            throw Errors.argument("rank must be >= 0, got " + rank);
        }
        int below = 0;
        for (int r : excludedRanks) {
            if (r == rank) {
                throw Errors.argument("rank " + rank + " is excluded: it has no rank after the shrink");
            }
            if (r < rank) {
                below++;
            }
        }
        return rank - below;
    }

    static void revoke(CommHealth c) {
        onParent(c, false, () -> {
            requireFunction(NcclFunction.ncclCommRevoke, "Communicator.revoke");
            int rc = NcclNative.ncclCommRevoke(c.handleUnchecked(), 0);
            if (rc == Errors.IN_PROGRESS) {
                rc = InitDeadline.waitWhileInProgress(c.handleUnchecked());
            }
            Errors.check(rc, NcclFunction.ncclCommRevoke, c);
            return null;
        });
    }

    static UniqueId growId(CommHealth c) {
        return onParent(c, false, () -> {
            requireFunction(NcclFunction.ncclCommGetUniqueId, "Communicator.growId");
            byte[] id = new byte[UniqueId.BYTES];
            Errors.check(NcclNative.ncclCommGetUniqueId(c.handleUnchecked(), id), NcclFunction.ncclCommGetUniqueId,
                    c);
            return UniqueId.of(id);
        });
    }

    static CommParts grow(CommHealth c, CommConfig made, int newSize, UniqueId id, CommConfig config) {
        return onParent(c, false, () -> {
            if (newSize <= c.size) {
                throw Errors.argument("newSize must be more than the communicator's " + c.size + " ranks, got "
                        + newSize);
            }
            requireFunction(NcclFunction.ncclCommGrow, "Communicator.grow");
            long[] out = new long[1];
            byte[] bytes = id == null ? null : id.internalBytes();
            long handle = c.handleUnchecked();
            int rc = config == null ? NcclNative.ncclCommGrow(handle, newSize, bytes, -1, out, null, null, null)
                    : NcclNative.ncclCommGrow(handle, newSize, bytes, -1, out, config.ints(), config.netName(),
                            config.commName());
            return child(c, made, rc, out, config, NcclFunction.ncclCommGrow);
        });
    }

    static CommParts join(int newSize, int rank, UniqueId id, int device, CommConfig config) {
        if (rank < 1 || rank >= newSize) {
            throw Errors.argument("rank must be in 1.." + (newSize - 1) + " (a joining rank comes after the existing "
                    + "ones), got " + rank);
        }
        if (id == null) {
            throw Errors.nullArgument("id");
        }
        if (device < 0) {
            throw Errors.argument("device must be >= 0, got " + device);
        }
        NcclLibrary lib = NcclLoad.library();
        if (!lib.has(NcclFunction.ncclCommGrow)) {
            throw Errors.unsupported("Communicator.join", NcclFunction.ncclCommGrow, lib);
        }
        WatchSettings settings = CommConfig.watchdogSettings(config, WatchdogConfig.fromEnvironment());
        Cuda.setDevice(device);
        long[] out = new long[1];
        int rc = config == null ? NcclNative.ncclCommGrow(0, newSize, id.internalBytes(), rank, out, null, null, null)
                : NcclNative.ncclCommGrow(0, newSize, id.internalBytes(), rank, out, config.ints(), config.netName(),
                        config.commName());
        boolean blocking = config == null || config.ints()[NcclNative.CFG_BLOCKING] != 0;
        return CommParts.of(InitDeadline.finished(rc, out, NcclFunction.ncclCommGrow, null,
                new InitDeadline(CommConfig.initTimeout(config), rank, newSize, null)), device, blocking, settings);
    }
}
