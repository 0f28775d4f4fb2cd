package org.nccl4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.ShortPointer;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * A range of GPU memory on one device: allocated here ({@code cudaMalloc}, or {@code ncclMemAlloc} for
 * buffers NCCL can register for zero-copy), or wrapped around memory another library owns. Copies to and
 * from Java arrays and NIO buffers. Close it to free what it allocated; a wrapped buffer's close frees
 * nothing. Closing twice is harmless; a buffer left unclosed is reported in the log, not freed.
 *
 * <p>A {@link #slice(long, long) slice} shares its parent's liveness: once the parent (or any buffer it was
 * sliced from) is closed, every use of the slice throws an {@link IllegalStateException} naming the closed
 * parent. Closing a slice frees nothing and leaves the parent usable.
 *
 * <p>Collectives that take a DeviceBuffer derive their element count from its size: a buffer whose size is not
 * a multiple of the data type's size is refused, never silently truncated.
 *
 * <p>While the calling thread is capturing a CUDA graph ({@link Stream#beginCapture()}), allocating, freeing,
 * filling and copying are refused with an {@link IllegalStateException}: CUDA forbids them during capture.
 */
public final class DeviceBuffer implements AutoCloseable {
    private static final int H2D = 1;
    private static final int D2H = 2;

    /** Who owns the memory. */
    enum Owner { CUDA_MALLOC, NCCL_MEM_ALLOC, FOREIGN, VIEW }

    private final long address;
    private final long bytes;
    private final int device;
    private final Owner owner;
    /** The buffer this is a slice of (whose memory it points into), or null. */
    private final DeviceBuffer parent;
    private final Leaks.Token leak;
    private volatile boolean closed;

    private DeviceBuffer(long address, long bytes, int device, Owner owner) {
        this(address, bytes, device, owner, null);
    }

    private DeviceBuffer(long address, long bytes, int device, Owner owner, DeviceBuffer parent) {
        this.address = address;
        this.bytes = bytes;
        this.device = device;
        this.owner = owner;
        this.parent = parent;
        this.leak = owner == Owner.CUDA_MALLOC || owner == Owner.NCCL_MEM_ALLOC
                ? Leaks.track(this, "DeviceBuffer of " + bytes + " bytes on device " + device + " (" + owner + ")")
                : null;
    }

    /**
     * Allocates {@code bytes} on {@code device} with {@code cudaMalloc}.
     *
     * @param device the CUDA device ordinal
     * @param bytes the size, {@code > 0}
     * @return the new buffer (contents undefined)
     */
    public static DeviceBuffer allocate(int device, long bytes) {
        checkSize(device, bytes);
        Capture.refuseOnCapturingThread("DeviceBuffer.allocate (cudaMalloc)");
        long addr = CudaCalls.onDevice(device, () -> {
            long[] a = new long[1];
            CudaCalls.check(CudaCalls.backend().malloc(a, bytes), "cudaMalloc(" + bytes + " bytes)", device);
            return a[0];
        });
        return new DeviceBuffer(addr, bytes, device, Owner.CUDA_MALLOC);
    }

    /**
     * Allocates {@code count} elements of {@code type} on {@code device} with {@code cudaMalloc}.
     *
     * @param device the CUDA device ordinal
     * @param count number of elements, {@code > 0}
     * @param type element type
     * @return the new buffer
     */
    public static DeviceBuffer allocate(int device, long count, DataType type) {
        if (type == null) {
            throw new IllegalArgumentException("type must not be null");
        }
        return allocate(device, Math.multiplyExact(count, (long) type.size()));
    }

    /**
     * Allocates with {@code ncclMemAlloc} (NCCL 2.19+), memory suited to {@code ncclCommRegister} and NVLS.
     *
     * @param device the CUDA device ordinal
     * @param bytes the size, {@code > 0}
     * @return the new buffer, freed with {@code ncclMemFree} on close
     */
    public static DeviceBuffer allocateNccl(int device, long bytes) {
        checkSize(device, bytes);
        Capture.refuseOnCapturingThread("DeviceBuffer.allocateNccl (ncclMemAlloc)");
        NcclLoad.library();
        long addr = CudaCalls.onDevice(device, () -> {
            long[] a = new long[1];
            Errors.check(NcclNative.ncclMemAlloc(a, bytes), NcclFunction.ncclMemAlloc, null);
            return a[0];
        });
        return new DeviceBuffer(addr, bytes, device, Owner.NCCL_MEM_ALLOC);
    }

    /**
     * Wraps memory owned by someone else (PyTorch, cuBLAS, your own cudaMalloc). nccl4j never frees it and
     * cannot check the address: it must be device memory of {@code bytes} bytes on {@code device}.
     *
     * @param address the device address, not 0
     * @param bytes its size, {@code > 0}
     * @param device the device that holds it
     * @return a buffer over that memory
     */
    public static DeviceBuffer wrap(long address, long bytes, int device) {
        if (address == 0) {
            throw new IllegalArgumentException("address must not be 0 (NULL)");
        }
        checkSize(device, bytes);
        return new DeviceBuffer(address, bytes, device, Owner.FOREIGN);
    }

    private static void checkSize(int device, long bytes) {
        if (device < 0) {
            throw new IllegalArgumentException("device must be >= 0, got " + device);
        }
        if (bytes <= 0) {
            throw new IllegalArgumentException("bytes must be > 0, got " + bytes);
        }
    }

    /**
     * A view of part of this buffer, sharing its memory and never freeing it. The view is usable only while
     * this buffer is open: after this buffer is closed, every use of the view throws. Closing the view frees
     * nothing and leaves this buffer usable.
     *
     * @param offset start, in bytes
     * @param length length, in bytes
     * @return the view
     * @throws IndexOutOfBoundsException when the range is not inside this buffer
     * @throws IllegalStateException when this buffer, or the buffer it is a slice of, is closed
     */
    public DeviceBuffer slice(long offset, long length) {
        ensureOpen();
        if (offset < 0 || length <= 0 || offset > bytes - length) {
            throw new IndexOutOfBoundsException("slice(" + offset + ", " + length + ") is outside this buffer of "
                    + bytes + " bytes");
        }
        return new DeviceBuffer(address + offset, length, device, Owner.VIEW, this);
    }

    /**
     * The device address. For a buffer that is not a slice it stays readable after {@link #close()} (as a
     * fact, like {@link #bytes()}); for a slice it is refused once the parent is closed, since the memory it
     * points into may have been freed.
     *
     * @return the device address
     * @throws IllegalStateException when this is a slice and its parent buffer (or one it was sliced from) is
     *     closed
     */
    public long address() {
        if (parent != null && parent.isClosed()) {
            throw closedError(describe());
        }
        return address;
    }

    /** The address whether or not the buffer (or its parent) is closed: for messages. */
    long addressUnchecked() {
        return address;
    }

    /** @return who owns the memory: for a slice, {@link Owner#VIEW} (its {@link #root()} owns it) */
    Owner owner() {
        return owner;
    }

    /** @return the buffer whose memory this one points into: itself, or for a slice the buffer first sliced */
    DeviceBuffer root() {
        DeviceBuffer b = this;
        while (b.parent != null) {
            b = b.parent;
        }
        return b;
    }

    /** @return the size in bytes */
    public long bytes() {
        return bytes;
    }

    /** @return the CUDA device holding the memory */
    public int device() {
        return device;
    }

    /**
     * @param type an element type
     * @return how many elements of {@code type} this buffer holds
     * @throws NullPointerException when {@code type} is null
     * @throws IllegalArgumentException when the size in bytes is not a multiple of {@code type}'s size (the count
     *     would be truncated): use a buffer whose size is a multiple, or a slice of whole elements
     */
    public long count(DataType type) {
        if (type == null) {
            throw Errors.nullArgument("type");
        }
        return count(type, "this DeviceBuffer", null);
    }

    /**
     * The number of elements of {@code type} in this buffer, for a count derived from its size; allocates
     * nothing unless it throws.
     *
     * @param name the argument's name for the message ("send", "recv", "buffer")
     * @param alternative a further fix to propose, or null
     * @throws IllegalArgumentException when the size is not a multiple of {@code type}'s size
     */
    long count(DataType type, String name, String alternative) {
        int size = type.size();
        if (bytes % size != 0) {
            throw notWholeElements(type, name, alternative);
        }
        return bytes / size;
    }

    private IllegalArgumentException notWholeElements(DataType type, String name, String alternative) {
        int size = type.size();
        long whole = bytes / size;
        String buffer = "use a buffer whose size is a multiple of " + size + " bytes";
        String slice = whole > 0
                ? "a slice of whole elements (slice(0, " + whole * size + ") holds " + whole + ")"
                : null;
        String fix = alternative == null
                ? (slice == null ? buffer : buffer + " or " + slice)
                : (slice == null ? buffer + " or " + alternative : buffer + ", " + slice + ", or " + alternative);
        return Errors.argument(name + " holds " + bytes + " bytes, not a multiple of the " + size + "-byte size of "
                + type + " (its element count would be truncated): " + fix);
    }

    /**
     * @return whether {@link #close()} was called on this buffer or, for a slice, on its parent (or on a buffer
     *     the parent was sliced from); either way the buffer may no longer be used
     */
    public boolean isClosed() {
        return closed || parent != null && parent.isClosed();
    }

    void ensureOpen() {
        if (isClosed()) {
            throw closedError(describe());
        }
    }

    private String describe() {
        return "this DeviceBuffer (" + bytes + " bytes on device " + device + ")";
    }

    /**
     * Why this buffer may not be used, with {@code subject} naming it: it was closed itself, or it is a slice
     * whose parent was closed (named by its {@link #toString()}).
     */
    IllegalStateException closedError(String subject) {
        if (closed) {
            return new IllegalStateException(subject + " is closed");
        }
        DeviceBuffer p = parent;
        while (p != null && !p.closed) {
            p = p.parent;
        }
        return new IllegalStateException(subject + " is a slice of " + p + ", and that parent buffer was closed: "
                + "its memory may be freed; keep the parent open while its slices are in use");
    }

    // ---- copies ----

    /**
     * Copies {@code src} into the start of this buffer ({@code cudaMemcpy} host to device) and waits until the
     * data is on the device, so that work enqueued afterwards on any stream sees it.
     *
     * @param src the values to copy, all of them: {@code 4 * src.length} bytes, at most this buffer's size
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer copyFrom(float[] src) {
        try (FloatPointer p = new FloatPointer(src)) {
            return fromHost(p, 4L * src.length, "float[]");
        }
    }

    /**
     * Copies {@code src} into the start of this buffer.
     *
     * @param src the values to copy, all of them: {@code 8 * src.length} bytes, at most this buffer's size
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer copyFrom(double[] src) {
        try (DoublePointer p = new DoublePointer(src)) {
            return fromHost(p, 8L * src.length, "double[]");
        }
    }

    /**
     * Copies {@code src} into the start of this buffer.
     *
     * @param src the values to copy, all of them: {@code 4 * src.length} bytes, at most this buffer's size
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer copyFrom(int[] src) {
        try (IntPointer p = new IntPointer(src)) {
            return fromHost(p, 4L * src.length, "int[]");
        }
    }

    /**
     * Copies {@code src} into the start of this buffer.
     *
     * @param src the values to copy, all of them: {@code 8 * src.length} bytes, at most this buffer's size
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer copyFrom(long[] src) {
        try (LongPointer p = new LongPointer(src)) {
            return fromHost(p, 8L * src.length, "long[]");
        }
    }

    /**
     * Copies {@code src} (e.g. float16/bfloat16 bit patterns) into the start of this buffer.
     *
     * @param src the values to copy, all of them: {@code 2 * src.length} bytes, at most this buffer's size
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer copyFrom(short[] src) {
        try (ShortPointer p = new ShortPointer(src)) {
            return fromHost(p, 2L * src.length, "short[]");
        }
    }

    /**
     * Copies {@code src} into the start of this buffer.
     *
     * @param src the values to copy, all of them: {@code src.length} bytes, at most this buffer's size
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer copyFrom(byte[] src) {
        try (BytePointer p = new BytePointer(src)) {
            return fromHost(p, src.length, "byte[]");
        }
    }

    /**
     * Copies the remaining bytes of {@code src} (direct or heap) into the start of this buffer; its position is
     * unchanged.
     *
     * @param src the bytes to copy, from its position to its limit: at most this buffer's size
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer copyFrom(ByteBuffer src) {
        if (src.isDirect()) {
            try (BytePointer p = new BytePointer(src)) {
                return fromHost(p, src.remaining(), "ByteBuffer");
            }
        }
        byte[] tmp = new byte[src.remaining()];
        src.duplicate().get(tmp);
        return copyFrom(tmp);
    }

    /**
     * Copies the start of this buffer into {@code dst} ({@code cudaMemcpy} device to host). The copy does not
     * wait for work on other (non-blocking) streams: synchronize the stream that wrote the buffer first.
     *
     * @param dst the array to fill, all of it: {@code 4 * dst.length} bytes, at most this buffer's size
     * @return {@code dst}, holding the copied values
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public float[] copyTo(float[] dst) {
        try (FloatPointer p = new FloatPointer(dst.length)) {
            toHost(p, 4L * dst.length, "float[]");
            p.get(dst);
        }
        return dst;
    }

    /**
     * Copies the start of this buffer into {@code dst}.
     *
     * @param dst the array to fill, all of it: {@code 8 * dst.length} bytes, at most this buffer's size
     * @return {@code dst}, holding the copied values
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public double[] copyTo(double[] dst) {
        try (DoublePointer p = new DoublePointer(dst.length)) {
            toHost(p, 8L * dst.length, "double[]");
            p.get(dst);
        }
        return dst;
    }

    /**
     * Copies the start of this buffer into {@code dst}.
     *
     * @param dst the array to fill, all of it: {@code 4 * dst.length} bytes, at most this buffer's size
     * @return {@code dst}, holding the copied values
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public int[] copyTo(int[] dst) {
        try (IntPointer p = new IntPointer(dst.length)) {
            toHost(p, 4L * dst.length, "int[]");
            p.get(dst);
        }
        return dst;
    }

    /**
     * Copies the start of this buffer into {@code dst}.
     *
     * @param dst the array to fill, all of it: {@code 8 * dst.length} bytes, at most this buffer's size
     * @return {@code dst}, holding the copied values
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public long[] copyTo(long[] dst) {
        try (LongPointer p = new LongPointer(dst.length)) {
            toHost(p, 8L * dst.length, "long[]");
            p.get(dst);
        }
        return dst;
    }

    /**
     * Copies the start of this buffer into {@code dst}.
     *
     * @param dst the array to fill, all of it: {@code 2 * dst.length} bytes, at most this buffer's size
     * @return {@code dst}, holding the copied values
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public short[] copyTo(short[] dst) {
        try (ShortPointer p = new ShortPointer(dst.length)) {
            toHost(p, 2L * dst.length, "short[]");
            p.get(dst);
        }
        return dst;
    }

    /**
     * Copies the start of this buffer into {@code dst}.
     *
     * @param dst the array to fill, all of it: {@code dst.length} bytes, at most this buffer's size
     * @return {@code dst}, holding the copied values
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public byte[] copyTo(byte[] dst) {
        try (BytePointer p = new BytePointer(dst.length)) {
            toHost(p, dst.length, "byte[]");
            p.get(dst);
        }
        return dst;
    }

    /**
     * Copies the start of this buffer into the remaining bytes of {@code dst}; its position is unchanged.
     *
     * @param dst receives the bytes, from its position to its limit: at most this buffer's size
     * @return {@code dst}, holding the copied bytes
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public ByteBuffer copyTo(ByteBuffer dst) {
        if (dst.isDirect()) {
            try (BytePointer p = new BytePointer(dst)) {
                toHost(p, dst.remaining(), "ByteBuffer");
            }
            return dst;
        }
        byte[] tmp = copyTo(new byte[dst.remaining()]);
        dst.duplicate().put(tmp);
        return dst;
    }

    /**
     * Sets every byte to {@code value} ({@code cudaMemset}).
     *
     * @param value the byte value; only its low 8 bits are used
     * @return this buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public DeviceBuffer fill(int value) {
        ensureOpen();
        Capture.refuseOnCapturingThread("DeviceBuffer.fill (cudaMemset)");
        // cudaMemset works on the current device's memory: run it on this buffer's device.
        CudaCalls.onDevice(device, () -> {
            CudaCalls.check(CudaCalls.backend().memset(address, value, bytes), "cudaMemset", device);
            return null;
        });
        return this;
    }

    /**
     * @return a little-endian direct ByteBuffer holding a copy of the whole buffer
     * @throws IllegalStateException when this buffer, or the parent it is a slice of, is closed
     */
    public ByteBuffer toByteBuffer() {
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalStateException("buffer of " + bytes + " bytes is too large for a ByteBuffer");
        }
        return copyTo(ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN));
    }

    private DeviceBuffer fromHost(Pointer host, long n, String what) {
        checkCopy(n, what);
        // cudaMemcpy from pageable memory may return before the DMA reaches the device, and work on nccl4j's
        // non-blocking streams does not wait for the legacy default stream: wait for it here, on this device.
        long src = hostAddress(host);
        CudaCalls.onDevice(device, () -> {
            CudaCalls.check(CudaCalls.backend().memcpy(address, src, n, H2D), "cudaMemcpy(host to device)", device);
            CudaCalls.check(CudaCalls.backend().streamSynchronize(0L), "cudaStreamSynchronize(default stream)", device);
            return null;
        });
        return this;
    }

    private void toHost(Pointer host, long n, String what) {
        checkCopy(n, what);
        CudaCalls.check(CudaCalls.backend().memcpy(hostAddress(host), address, n, D2H), "cudaMemcpy(device to host)",
                device);
    }

    /**
     * Where a host pointer's data starts: JavaCPP's address() of a pointer made from a ByteBuffer is the
     * buffer's start, and its position() is the buffer's position.
     */
    private static long hostAddress(Pointer host) {
        return host.address() + host.position() * host.sizeof();
    }

    private void checkCopy(long n, String what) {
        ensureOpen();
        Capture.refuseOnCapturingThread("a synchronous DeviceBuffer copy (cudaMemcpy)");
        if (n > bytes) {
            throw new IllegalArgumentException("the " + what + " holds " + n + " bytes but this DeviceBuffer has only "
                    + bytes + ": copy fewer elements or allocate a larger buffer");
        }
    }

    /**
     * Frees the memory if this buffer allocated it ({@code cudaFree} or {@code ncclMemFree}). Idempotent.
     * Closing a slice frees nothing and leaves its parent usable; closing a parent makes its slices unusable.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (owner == Owner.CUDA_MALLOC || owner == Owner.NCCL_MEM_ALLOC) {
            Capture.refuseOnCapturingThread("DeviceBuffer.close (cudaFree)");
        }
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (leak != null) {
            leak.closed();
        }
        if (owner == Owner.CUDA_MALLOC) {
            CudaCalls.onDevice(device, () -> {
                CudaCalls.check(CudaCalls.backend().free(address), "cudaFree", device);
                return null;
            });
        } else if (owner == Owner.NCCL_MEM_ALLOC) {
            Errors.check(NcclNative.ncclMemFree(address), NcclFunction.ncclMemFree, null);
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer[0x" + Long.toHexString(address) + ", " + bytes + " bytes, device " + device + ", "
                + owner + (closed ? ", closed" : isClosed() ? ", parent closed" : "") + "]";
    }
}
