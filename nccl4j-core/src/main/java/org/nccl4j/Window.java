package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;

/**
 * A buffer registered with a communicator as a symmetric window ({@code ncclCommWindowRegister} with
 * {@code NCCL_WIN_COLL_SYMMETRIC}, NCCL 2.27+): the memory NCCL's symmetric kernels read and write directly, on
 * every rank at once. Made by {@link Communicator#registerWindow(DeviceBuffer)} for a buffer you own, or by
 * {@link #allocate(Communicator, long, DataType)}, which allocates the memory too ({@code ncclMemAlloc}) and frees
 * it at close. Pass {@link #buffer()} (or slices of it) to the collectives like any other {@link DeviceBuffer}.
 *
 * <h2>What NCCL asks of a window</h2>
 * <ul>
 *   <li><b>Every rank registers.</b> The registration is collective: every rank of the communicator calls it, in the
 *       same order as its other collective calls on the communicator. A rank that does not call it leaves the others
 *       waiting. (NCCL also allows it inside {@code ncclGroupStart/End}, where from 2.28 it fills the handle only at
 *       {@code ncclGroupEnd}; nccl4j refuses it inside a group, and on a nonblocking communicator, because the
 *       handle would be written after the call has returned.)</li>
 *   <li><b>CUDA virtual memory.</b> The memory must come from the CUDA virtual memory API ({@code cuMem*}):
 *       {@link DeviceBuffer#allocateNccl} ({@code ncclMemAlloc}) gives such memory, with the granularity NCCL needs;
 *       {@code cudaMalloc} memory ({@link DeviceBuffer#allocate}) does not, and nccl4j refuses it before NCCL. Memory
 *       {@link DeviceBuffer#wrap wrapped} from another library cannot be checked here: NCCL refuses it if it is not
 *       cuMem memory. NCCL 2.27 registers the whole cuMem allocation, which must
 *       start and end on 2 MiB boundaries (ncclMemAlloc's do); from NCCL 2.28 a window may start inside an
 *       allocation at a multiple of 4096 bytes ({@code NCCL_WIN_REQUIRED_ALIGNMENT}), which nccl4j checks for slices
 *       of {@code ncclMemAlloc} buffers.</li>
 *   <li><b>The same size and offsets on every rank.</b> Before NCCL 2.30.7 every rank registers a window of the same
 *       size (2.30.7 accepts different sizes); and with {@code NCCL_WIN_COLL_SYMMETRIC} every rank passes a collective
 *       buffers at the same offset from the start of its window. Neither can be checked on one rank: nccl4j does not
 *       compare them, since that would take a collective of its own. {@code NCCL4J_CHECK_COLLECTIVES} compares each
 *       collective's count, type, operator and root across ranks, not addresses or window sizes; NCCL 2.29.7+ checks
 *       symmetric buffers across ranks under {@code NCCL_CHECK_MODE=DEBUG_GLOBAL}.</li>
 *   <li><b>On this communicator's device</b> (checked), and open while NCCL may use it: close the window after the
 *       collectives that use it have completed, and before freeing the memory ({@code ncclCommWindowDeregister} is
 *       local to the rank and does not wait for them).</li>
 * </ul>
 * If NCCL cannot make windows (CUDA's virtual memory API unavailable, {@code NCCL_WIN_ENABLE=0}, or a communicator
 * without symmetric support) the registration may succeed without a window: {@link #handle()} is then 0 and the
 * collectives run as they would on any buffer.
 *
 * <h2>What the symmetric kernels do with it</h2>
 * NCCL picks its symmetric kernels for a collective whose buffers all lie in symmetric windows, when they apply
 * (NCCL's release notes and {@code src/device/symmetric/generate.py} of each release):
 * <ul>
 *   <li>Collectives: all-reduce, all-gather and reduce-scatter.</li>
 *   <li>Types: 32-bit floating point and smaller ({@link DataType#FLOAT32}, {@link DataType#FLOAT16},
 *       {@link DataType#BFLOAT16}, the two FP8 types), summed in fp32 accumulators (fp8 on NVLS in fp16), so fp16
 *       and fp8 sums are more accurate than with the other kernels.</li>
 *   <li>Operators: {@link ReduceOp#SUM}; from NCCL 2.30.3 also {@link ReduceOp#AVG} for reduce-scatter. Any other
 *       operator, type or collective runs NCCL's other kernels on the same buffers.</li>
 *   <li>Transports: in 2.27 and 2.28 only ranks that reach each other over NVLink or PCIe peer-to-peer (P2P and NVLS
 *       transports), not over the network; later releases add network kernels for some of them. NCCL 2.27 runs at
 *       most one collective per group on them; 2.28 aggregates grouped ones.</li>
 *   <li>Sizes: the gains are largest for small and medium messages (latency); large ones gain less.</li>
 * </ul>
 * With {@link CtaPolicy#ZERO} (NCCL 2.28+), all-gather, all-to-all, gather and scatter whose send and receive buffers
 * both lie in symmetric windows run on the GPU's copy engines instead of its SMs, within one NVLink domain (and, from
 * NCCL 2.30.7, all-gather and all-to-all across nodes too).
 *
 * <h2>Closing</h2>
 * {@link #close()} calls {@code ncclCommWindowDeregister}, then, for a window made by {@code allocate},
 * {@code ncclMemFree}. It is idempotent, and once the communicator is closed it deregisters nothing (NCCL freed the
 * window with the communicator) but still frees the memory it allocated. While the calling thread captures a CUDA
 * graph, registering and closing are refused.
 */
public final class Window implements AutoCloseable {
    /** {@code NCCL_WIN_COLL_SYMMETRIC} (nccl.h, 2.27+). */
    static final int COLL_SYMMETRIC = 0x01;
    /** {@code NCCL_WIN_REQUIRED_ALIGNMENT} (nccl.h, 2.28.3+): a window's offset in its cuMem allocation. */
    static final long REQUIRED_ALIGNMENT = 4096;
    /** The release whose nccl.h defines {@link #REQUIRED_ALIGNMENT}. */
    private static final int ALIGNMENT_SINCE = 22803;

    private final Communicator comm;
    private final CommBound bound;
    private final long handle;
    /** What the user passes to collectives: the registered buffer, or a view of the memory this window owns. */
    private final DeviceBuffer buffer;
    /** The memory this window allocated and frees at close, or null. */
    private final DeviceBuffer owned;

    private Window(Communicator comm, long handle, DeviceBuffer buffer, DeviceBuffer owned) {
        this.comm = comm;
        this.bound = new CommBound(comm.health(), NcclFunction.ncclCommWindowDeregister);
        this.handle = handle;
        this.buffer = buffer;
        this.owned = owned;
    }

    /**
     * Allocates {@code count} elements of {@code type} with {@code ncclMemAlloc} on the communicator's device and
     * registers them as a symmetric window ({@code ncclCommWindowRegister} with {@code NCCL_WIN_COLL_SYMMETRIC},
     * NCCL 2.27+): the short way to a buffer NCCL's symmetric kernels use. Collective, as the registration is: every
     * rank calls it with the same count and type. The window owns the memory: {@link #close()} deregisters it, then
     * frees it ({@code ncclMemFree}). See the class comment for what NCCL asks and what it gives.
     *
     * @param comm the communicator; the memory is on its device
     * @param count the number of elements, {@code > 0}
     * @param type the element type
     * @return the window; use {@link #buffer()} in collectives
     * @throws NullPointerException when {@code comm} or {@code type} is null
     * @throws IllegalArgumentException when {@code count <= 0}
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.27 (nothing is allocated)
     * @throws IllegalStateException when the communicator is closed, inside a group, on a nonblocking communicator
     *     or while the calling thread captures a CUDA graph (nothing is allocated)
     * @throws NcclException when ncclMemAlloc or ncclCommWindowRegister fails (the memory is freed again)
     */
    public static Window allocate(Communicator comm, long count, DataType type) {
        if (type == null) {
            throw Errors.nullArgument("type");
        }
        if (count <= 0) {
            throw Errors.argument("count must be > 0, got " + count + ": a window holds at least one element");
        }
        return allocate(comm, Math.multiplyExact(count, (long) type.size()));
    }

    /**
     * {@link #allocate(Communicator, long, DataType)} in bytes: {@code ncclMemAlloc} of {@code bytes} on the
     * communicator's device, registered as a symmetric window ({@code ncclCommWindowRegister}, NCCL 2.27+).
     * Collective: every rank calls it with the same size.
     *
     * @param comm the communicator; the memory is on its device
     * @param bytes the size, {@code > 0}
     * @return the window, owning the memory
     * @throws NullPointerException when {@code comm} is null
     * @throws IllegalArgumentException when {@code bytes <= 0}
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.27 (nothing is allocated)
     * @throws IllegalStateException when the communicator is closed, inside a group, on a nonblocking communicator
     *     or while the calling thread captures a CUDA graph (nothing is allocated)
     * @throws NcclException when ncclMemAlloc or ncclCommWindowRegister fails (the memory is freed again)
     */
    public static Window allocate(Communicator comm, long bytes) {
        if (comm == null) {
            throw Errors.nullArgument("comm");
        }
        if (bytes <= 0) {
            throw Errors.argument("bytes must be > 0, got " + bytes + ": a window holds at least one byte");
        }
        String api = "Window.allocate (ncclMemAlloc, ncclCommWindowRegister)";
        checkCommunicator(comm, api);
        DeviceBuffer memory = DeviceBuffer.allocateNccl(comm.device(), bytes);
        try {
            long h = registerChecked(comm, memory);
            return new Window(comm, h, memory.slice(0, bytes), memory);
        } catch (RuntimeException e) {
            try {
                memory.close();
            } catch (RuntimeException f) {
                e.addSuppressed(f);
            }
            throw e;
        }
    }

    /** {@link Communicator#registerWindow(DeviceBuffer)}. */
    static Window register(Communicator comm, DeviceBuffer buffer) {
        checkCommunicator(comm, "Communicator.registerWindow (ncclCommWindowRegister)");
        return new Window(comm, registerChecked(comm, buffer), buffer, null);
    }

    /** Refuses, before anything is allocated or registered, what no buffer could make right. */
    private static void checkCommunicator(Communicator comm, String api) {
        comm.handle();   // throws when the communicator is closed or failed
        NcclLibrary lib = NcclLoad.library();
        if (!lib.has(NcclFunction.ncclCommWindowRegister)) {
            throw Errors.unsupported(api, NcclFunction.ncclCommWindowRegister, lib);
        }
        Capture.refuseOnCapturingThread(api);
        if (Groups.open() != 0) {
            throw new IllegalStateException(api + " is not allowed while a group is open (Nccl.group, groupStart; "
                    + "on any thread): inside a group NCCL fills the window's handle only at ncclGroupEnd, after the "
                    + "call has returned. Register before the group begins or after it ends");
        }
        if (!comm.isBlocking()) {
            throw new IllegalStateException(api + " is not allowed on a nonblocking communicator (" + comm + "): NCCL "
                    + "may fill the window's handle after the call has returned (ncclInProgress). Register with a "
                    + "blocking communicator (CommConfig.blocking(true), the default)");
        }
    }

    /** Checks the buffer, then makes the one NCCL call. */
    private static long registerChecked(Communicator comm, DeviceBuffer buffer) {
        checkBuffer(comm, buffer);
        long[] h = new long[1];
        Errors.check(NcclNative.ncclCommWindowRegister(comm.handle(), buffer.address(), buffer.bytes(), h,
                COLL_SYMMETRIC), NcclFunction.ncclCommWindowRegister, comm.health());
        return h[0];
    }

    private static void checkBuffer(Communicator comm, DeviceBuffer buffer) {
        if (buffer == null) {
            throw Errors.nullArgument("buffer");
        }
        if (buffer.isClosed()) {
            throw buffer.closedError("buffer");
        }
        if (buffer.device() != comm.device()) {
            throw Errors.argument("buffer is on device " + buffer.device() + " but this communicator (rank "
                    + comm.rank() + ") uses device " + comm.device() + ": allocate it on device " + comm.device());
        }
        DeviceBuffer root = buffer.root();
        if (root.owner() == DeviceBuffer.Owner.CUDA_MALLOC) {
            throw Errors.argument("buffer" + (root == buffer ? "" : " is a slice of " + root + ", which")
                    + " was allocated with cudaMalloc (DeviceBuffer.allocate), but a symmetric window needs memory "
                    + "of CUDA's virtual memory API: allocate it with DeviceBuffer.allocateNccl (ncclMemAlloc), or "
                    + "let Window.allocate allocate and register it in one call");
        }
        long offset = buffer.address() - root.address();
        if (root.owner() == DeviceBuffer.Owner.NCCL_MEM_ALLOC && offset % REQUIRED_ALIGNMENT != 0
                && NcclLoad.library().versionCode() >= ALIGNMENT_SINCE) {
            throw Errors.argument("buffer starts " + offset + " bytes into its ncclMemAlloc allocation " + root
                    + ", not a multiple of " + REQUIRED_ALIGNMENT + " (NCCL_WIN_REQUIRED_ALIGNMENT): register a slice"
                    + " that starts at a multiple of " + REQUIRED_ALIGNMENT + " bytes, or the whole buffer");
        }
    }

    /**
     * The buffer to pass to collectives: the one registered, or, for a window made by {@code allocate}, a view of
     * the memory it owns (closing the view frees nothing; once the window is closed, using the view throws).
     *
     * @return the window's buffer
     */
    public DeviceBuffer buffer() {
        return buffer;
    }

    /** @return the window's size in bytes, as registered */
    public long bytes() {
        return buffer.bytes();
    }

    /** @return the communicator it is registered with */
    public Communicator communicator() {
        return comm;
    }

    /**
     * @return NCCL's {@code ncclWindow_t} handle, for code that calls NCCL itself; 0 when NCCL made no window (see
     *     the class comment)
     */
    public long handle() {
        return handle;
    }

    /** @return whether this window allocated its memory ({@link #allocate}) and frees it at close */
    public boolean ownsMemory() {
        return owned != null;
    }

    /** @return whether {@link #close()} was called */
    public boolean isClosed() {
        return bound.isClosed();
    }

    /**
     * {@code ncclCommWindowDeregister} (local to this rank: no collective may still use the window), then, for a
     * window made by {@code allocate}, {@code ncclMemFree}. Idempotent. Once the communicator is closed, nothing is
     * deregistered (NCCL freed the window with it) but the memory is still freed. When the deregistration fails the
     * memory is freed all the same and the window counts as closed.
     *
     * @throws NcclException when ncclCommWindowDeregister or ncclMemFree fails (the other's failure suppressed)
     * @throws IllegalStateException while the calling thread captures a CUDA graph (nothing is done)
     */
    @Override
    public void close() {
        if (bound.isClosed()) {
            return;
        }
        Capture.refuseOnCapturingThread(owned == null ? "Window.close (ncclCommWindowDeregister)"
                : "Window.close (ncclCommWindowDeregister, ncclMemFree)");
        RuntimeException first = null;
        try {
            bound.close(c -> handle == 0 ? Errors.SUCCESS : NcclNative.ncclCommWindowDeregister(c, handle));
        } catch (RuntimeException e) {
            first = e;
        }
        if (owned != null) {
            try {
                owned.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "Window[handle 0x" + Long.toHexString(handle) + ", " + buffer.bytes() + " bytes at 0x"
                + Long.toHexString(buffer.addressUnchecked()) + ", rank " + comm.rank() + " of " + comm.size()
                + (owned != null ? ", owns its memory" : "") + (isClosed() ? ", closed" : "") + "]";
    }
}
