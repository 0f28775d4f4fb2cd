package org.nccl4j;

/**
 * A CUDA runtime call made by nccl4j failed. Message format:
 * {@code cudaMalloc failed on device 1: cudaErrorMemoryAllocation (2): out of memory}.
 */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The {@code cudaError_t} the call returned. */
    private final int code;
    /** The CUDA function that failed. */
    private final String operation;
    /** The device involved, or -1. */
    private final int device;

    /**
     * @param operation the CUDA function, e.g. {@code cudaMemcpy}
     * @param code the {@code cudaError_t} it returned
     * @param name CUDA's name of the error, or null
     * @param text CUDA's description, or null
     * @param device the device involved, or -1
     */
    public CudaException(String operation, int code, String name, String text, int device) {
        super(operation + " failed" + (device >= 0 ? " on device " + device : "") + ": "
                + (name != null ? name : "cudaError") + " (" + code + ")" + (text != null ? ": " + text : ""));
        this.code = code;
        this.operation = operation;
        this.device = device;
    }

    /** @return the {@code cudaError_t} code */
    public int code() {
        return code;
    }

    /** @return the CUDA function that failed */
    public String operation() {
        return operation;
    }

    /** @return the device involved, or -1 */
    public int device() {
        return device;
    }
}
