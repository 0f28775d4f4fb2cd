package org.nccl4j;

import org.nccl4j.jni.NcclLibrary;

/**
 * The argument checks of Communicator's collectives, as LWJGL's {@code Checks}: small static methods that the one
 * path calls and the JIT inlines, each throwing from an out-of-line helper that builds the message (the cold path).
 * They allocate nothing unless they throw.
 */
final class Arguments {
    /** The fix proposed, besides a buffer of whole elements, when a buffer's size is not: an explicit count. */
    private static final String EXPLICIT_COUNT = "the overload that takes device addresses and an explicit count";

    private Arguments() {
    }

    static void type(NcclLibrary library, DataType type) {
        if (type == null) {
            throw Errors.nullArgument("type");
        }
        if (type.isFp8() && library.versionCode() < DataType.FP8_SINCE) {
            throw new UnsupportedOperationException(type + " needs NCCL 2.24 or newer; the loaded NCCL is "
                    + library.version() + " (" + library.path() + ")");
        }
    }

    static void stream(CommHealth c, Stream stream) {
        if (stream == null) {
            throw Errors.nullArgument("stream");
        }
        if (stream.isClosed() || stream.device() != c.device) {
            throw streamError(c, stream);
        }
    }

    private static RuntimeException streamError(CommHealth c, Stream stream) {
        if (stream.isClosed()) {
            return new IllegalStateException("stream is closed");
        }
        return Errors.argument("stream is on device " + stream.device() + " but this communicator (rank " + c.rank
                + ") uses device " + c.device + ": use a stream of device " + c.device);
    }

    static void buffer(CommHealth c, DeviceBuffer b, String name) {
        if (b == null) {
            throw Errors.nullArgument(name);
        }
        if (b.isClosed() || b.device() != c.device) {
            throw bufferError(c, b, name);
        }
    }

    private static RuntimeException bufferError(CommHealth c, DeviceBuffer b, String name) {
        if (b.isClosed()) {
            return b.closedError(name);
        }
        return Errors.argument(name + " is on device " + b.device() + " but this communicator (rank " + c.rank
                + ") uses device " + c.device + ": allocate it on device " + c.device);
    }

    static void fits(DeviceBuffer b, long count, DataType type, String name) {
        if (count > b.bytes() / type.size()) {
            throw fitError(b, count, type, name);
        }
    }

    private static RuntimeException fitError(DeviceBuffer b, long count, DataType type, String name) {
        return Errors.argument(name + " holds " + b.bytes() / type.size() + " elements of " + type + " ("
                + b.bytes() + " bytes) but the operation needs " + count + ": use a larger buffer or a smaller count");
    }

    static void rank(CommHealth c, int r, String name) {
        if (r < 0 || r >= c.size) {
            throw Errors.argument(name + " must be in 0.." + (c.size - 1) + " (the communicator has " + c.size
                    + " ranks), got " + r);
        }
    }

    static void raw(long address, String name, long count) {
        if (address == 0 && count > 0) {
            throw Errors.argument(name + " must not be 0 (NULL)");
        }
        if (count < 0) {
            throw Errors.argument("count must be >= 0, got " + count);
        }
    }

    /** The count of a collective derived from {@code b}'s size: refused unless it is a whole number of elements. */
    static long elements(CommHealth c, DeviceBuffer b, DataType type, String name) {
        buffer(c, b, name);
        return b.count(type, name, EXPLICIT_COUNT);
    }

    static long perRank(CommHealth c, long total, String name, DataType type) {
        if (total % c.size != 0) {
            throw Errors.argument(name + " holds " + total + " elements of " + type + ", not a multiple of the "
                    + c.size + " ranks");
        }
        return total / c.size;
    }
}
