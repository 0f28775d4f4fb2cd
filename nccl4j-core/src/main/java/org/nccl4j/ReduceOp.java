package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * A reduction operator ({@code ncclRedOp_t}): the built-in {@link #SUM}, {@link #PROD}, {@link #MAX},
 * {@link #MIN}, {@link #AVG}, or a {@link PreMulSum} made for one communicator and data type with
 * {@link Communicator#createPreMulSum(double, DataType)} or
 * {@link Communicator#createPreMulSum(DeviceBuffer, DataType)}.
 */
public class ReduceOp {
    /** {@code ncclSum}. */
    public static final ReduceOp SUM = new ReduceOp(0, "SUM");
    /** {@code ncclProd}. */
    public static final ReduceOp PROD = new ReduceOp(1, "PROD");
    /** {@code ncclMax}. */
    public static final ReduceOp MAX = new ReduceOp(2, "MAX");
    /** {@code ncclMin}. */
    public static final ReduceOp MIN = new ReduceOp(3, "MIN");
    /** {@code ncclAvg} (NCCL 2.10+). */
    public static final ReduceOp AVG = new ReduceOp(4, "AVG");

    private static final ReduceOp[] BUILT_IN = {SUM, PROD, MAX, MIN, AVG};

    private final int code;
    private final String name;

    ReduceOp(int code, String name) {
        this.code = code;
        this.name = name;
    }

    /** @return the {@code ncclRedOp_t} value */
    public int code() {
        return code;
    }

    /** @return the five built-in operators */
    public static ReduceOp[] builtIn() {
        return BUILT_IN.clone();
    }

    /** Throws unless this operator can be used on the communicator {@code comm} with {@code type}. */
    void checkUsable(CommHealth comm, DataType type) {
        // built-in operators work everywhere
    }

    @Override
    public String toString() {
        return name;
    }

    /**
     * A pre-multiplied sum ({@code ncclRedOpCreatePreMulSum}): each rank's input is multiplied by a scalar
     * before summation. Valid only on the communicator and data type it was made for; close it
     * ({@code ncclRedOpDestroy}) when no collective that uses it is being enqueued any more.
     */
    public static final class PreMulSum extends ReduceOp implements AutoCloseable {
        private final Communicator comm;
        private final DataType type;
        private final CommBound bound;

        PreMulSum(int code, Communicator comm, DataType type, String description) {
            super(code, "PreMulSum(" + description + ", " + type + ")");
            this.comm = comm;
            this.type = type;
            this.bound = new CommBound(comm.health(), NcclFunction.ncclRedOpDestroy);
        }

        /** {@link Communicator#createPreMulSum(double, DataType)}: with a host scalar. */
        static PreMulSum create(Communicator comm, double scalar, DataType type) {
            comm.ensureOpen();
            Arguments.type(comm.library(), type);
            long bits = Scalars.checkedBits(scalar, type);
            int[] op = new int[1];
            Errors.check(NcclNative.ncclRedOpCreatePreMulSumHost(op, bits, type.code(), comm.nativeHandle()),
                    NcclFunction.ncclRedOpCreatePreMulSum, comm.health());
            return new PreMulSum(op[0], comm, type, "host " + scalar);
        }

        /** {@link Communicator#createPreMulSum(DeviceBuffer, DataType)}: with a device scalar. */
        static PreMulSum create(Communicator comm, DeviceBuffer scalar, DataType type) {
            comm.ensureOpen();
            Arguments.type(comm.library(), type);
            Arguments.buffer(comm.health(), scalar, "scalar");
            if (scalar.bytes() < type.size()) {
                throw Errors.argument("scalar holds " + scalar.bytes() + " bytes, less than one " + type);
            }
            int[] op = new int[1];
            Errors.check(NcclNative.ncclRedOpCreatePreMulSum(op, scalar.address(), type.code(), 0,
                    comm.nativeHandle()), NcclFunction.ncclRedOpCreatePreMulSum, comm.health());
            return new PreMulSum(op[0], comm, type, "device 0x" + Long.toHexString(scalar.address()));
        }

        /** @return the communicator this operator belongs to */
        public Communicator communicator() {
            return comm;
        }

        /** @return the data type this operator was made for */
        public DataType type() {
            return type;
        }

        @Override
        void checkUsable(CommHealth c, DataType t) {
            if (bound.isClosed()) {
                throw new IllegalStateException(this + " is closed");
            }
            if (c != comm.health()) {
                throw Errors.argument(this + " belongs to another communicator (rank " + comm.rank() + " of "
                        + comm.size() + "): create one per communicator");
            }
            if (t != type) {
                throw Errors.argument(this + " was made for " + type + " but the collective uses " + t
                        + ": create one per data type");
            }
        }

        /**
         * Destroys the operator ({@code ncclRedOpDestroy}). Idempotent; a no-op after the communicator closed.
         *
         * @throws NcclException when ncclRedOpDestroy fails (the operator counts as closed all the same)
         */
        @Override
        public void close() {
            bound.close(c -> NcclNative.ncclRedOpDestroy(code(), c));
        }
    }
}
