package org.nccl4j;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.NcclEnvironment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Entry point of nccl4j: the loaded NCCL library, groups, unique ids, and a report of open resources.
 *
 * <p>The NCCL library is opened on first use as {@link NcclLibrary} documents ({@code -Dnccl4j.library},
 * {@code NCCL4J_LIBRARY}, then {@code libnccl.so.2}) and described once at INFO through SLF4J.
 */
public final class Nccl {
    private static final Logger LOG = LoggerFactory.getLogger(Nccl.class);
    private static final AtomicBoolean LOGGED = new AtomicBoolean();
    /** Groups open in this process: operations recorded meanwhile are published to the watchdog at their end. */
    private static final AtomicInteger OPEN_GROUPS = new AtomicInteger();
    /**
     * What runs when the last open group of the process ends: the watchdog sets it as it starts, to publish what its
     * communicators recorded inside the groups; nothing before.
     */
    private static volatile Runnable groupsEnded = () -> { };

    private Nccl() {
    }

    /**
     * The loaded NCCL library, opening it on first call.
     *
     * @return the library (version, path, capabilities)
     * @throws org.nccl4j.jni.NcclUnavailableException when no NCCL can be opened
     */
    public static NcclLibrary library() {
        NcclLibrary lib = NcclLibrary.load();
        if (LOGGED.compareAndSet(false, true)) {
            applySystemProperties();
            LOG.info("nccl4j: loaded NCCL {} from {} (chosen by {}); {} of {} entry points present",
                    lib.version(), lib.path(), lib.source(), lib.available().size(), NcclFunction.values().length);
        }
        NcclLog.install();   // before NCCL first logs, when it reads NCCL_DEBUG_FILE; a bad switch is refused each time
        return lib;
    }

    /**
     * Applies the {@code nccl.*} system properties (e.g. {@code -Dnccl.algo=Ring}) to the process environment,
     * once, before NCCL first reads it.
     */
    private static void applySystemProperties() {
        NcclEnvironment env = NcclEnvironment.fromSystemProperties();
        if (!env.settings().isEmpty()) {
            List<String> changed = env.apply();
            LOG.info("nccl4j: applied NCCL settings from system properties: {} (changed: {})", env.settings(), changed);
        }
    }

    /** @return the loaded NCCL's version, e.g. "2.28.3" ({@code ncclGetVersion}) */
    public static String version() {
        return library().version();
    }

    /**
     * Whether NCCL has initialized in this process: a unique id or a communicator has been made, so NCCL has read
     * its environment and changing it no longer has an effect ({@link NcclEnvironment#isNcclInitialized()}).
     *
     * @return true once NCCL has initialized
     */
    public static boolean isInitialized() {
        return NcclEnvironment.isNcclInitialized();
    }

    /**
     * Starts a group ({@code ncclGroupStart}); closing it calls {@code ncclGroupEnd}. Use with
     * try-with-resources: {@code try (var g = Nccl.group()) { ... }}.
     *
     * <p>Each call allocates one {@link Group} (16 bytes, {@code CollectiveAllocationBenchmark.groupOfTwo}): the JIT
     * cannot remove it, because try-with-resources hands it to {@code close()} on its exception path too. Loops that
     * must not allocate use {@link #groupStart()} and {@link #groupEnd()}.
     *
     * @return the open group
     */
    public static Group group() {
        library();
        groupStart();
        return new Group();
    }

    /**
     * {@code ncclGroupStart}, without the {@link Group} object of {@link #group()}: for loops that must not
     * allocate. Pair every call with {@link #groupEnd()} (in a finally block).
     */
    public static void groupStart() {
        Errors.check(NcclNative.ncclGroupStart(), NcclFunction.ncclGroupStart, null);
        OPEN_GROUPS.incrementAndGet();
    }

    /** {@code ncclGroupEnd} of a group opened by {@link #groupStart()}: its status, unchecked. */
    static int groupEndStatus() {
        int rc = NcclNative.ncclGroupEnd();
        groupOver();
        return rc;
    }

    /** A group opened by {@link #groupStart()} is over (ended, or simulated, which ends it too). */
    static void groupOver() {
        if (OPEN_GROUPS.updateAndGet(n -> Math.max(0, n - 1)) == 0) {
            groupsEnded.run();
        }
    }

    /** Sets what runs when the last open group of the process ends (the watchdog's publication). */
    static void whenGroupsEnd(Runnable r) {
        groupsEnded = r;
    }

    /** @return how many groups are open in this process (any thread) */
    static int openGroups() {
        return OPEN_GROUPS.get();
    }

    /**
     * {@code ncclGroupEnd}, closing a group opened by {@link #groupStart()}: launches its operations.
     * ncclInProgress (nonblocking communicators) is not an error.
     */
    public static void groupEnd() {
        int rc = groupEndStatus();
        if (rc != Errors.SUCCESS && rc != Errors.IN_PROGRESS) {
            throw Errors.failure(rc, NcclFunction.ncclGroupEnd, null);
        }
    }

    /**
     * {@code ncclGetUniqueId}.
     *
     * @return a new unique id for a communicator
     */
    public static UniqueId uniqueId() {
        return UniqueId.generate();
    }

    /**
     * Describes every device buffer, stream, event and communicator still open, with where it was made.
     *
     * @return one line per open resource
     */
    public static List<String> openResources() {
        return Leaks.open();
    }
}
