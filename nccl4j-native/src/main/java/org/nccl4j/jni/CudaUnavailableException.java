package org.nccl4j.jni;

/**
 * No usable CUDA runtime could be opened, or a setting that chooses one is malformed. The message starts "The CUDA
 * runtime could not be loaded", says which libraries were tried, from which setting, why each was refused, and how
 * to fix it (install the CUDA 12 or 13 runtime, or point {@code NCCL4J_CUDART} at one). An
 * {@link IllegalStateException}, as nccl4j's failures to reach CUDA have always been.
 */
public class CudaUnavailableException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what was tried and why it failed
     * @param cause the underlying error, or null
     */
    public CudaUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
