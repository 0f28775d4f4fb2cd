package org.nccl4j;

import java.util.List;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.launch.NcclEnvironment;

/**
 * Entry point of nccl4j: the loaded NCCL library, groups, unique ids, and a report of open resources.
 *
 * <p>The NCCL library is opened on first use as {@link NcclLibrary} documents ({@code -Dnccl4j.library},
 * {@code NCCL4J_LIBRARY}, then {@code libnccl.so.2}) and described once at INFO through SLF4J.
 */
public final class Nccl {
    private Nccl() {
    }

    /**
     * The loaded NCCL library, opening it on first call.
     *
     * @return the library (version, path, capabilities)
     * @throws org.nccl4j.jni.NcclUnavailableException when no NCCL can be opened
     */
    public static NcclLibrary library() {
        return NcclLoad.library();
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
        Groups.start();
        return new Group();
    }

    /**
     * {@code ncclGroupStart}, without the {@link Group} object of {@link #group()}: for loops that must not
     * allocate. Pair every call with {@link #groupEnd()} (in a finally block).
     */
    public static void groupStart() {
        Groups.start();
    }

    /**
     * {@code ncclGroupEnd}, closing a group opened by {@link #groupStart()}: launches its operations.
     * ncclInProgress (nonblocking communicators) is not an error.
     */
    public static void groupEnd() {
        Groups.end();
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
