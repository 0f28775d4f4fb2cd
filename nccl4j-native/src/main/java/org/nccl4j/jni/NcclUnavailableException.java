package org.nccl4j.jni;

/**
 * No usable NCCL library could be opened. The message says which libraries were tried, from which setting,
 * why each failed, and how to point nccl4j at a library ({@code -Dnccl4j.library=/path/libnccl.so.2} or
 * {@code NCCL4J_LIBRARY}).
 */
public class NcclUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what was searched and why it failed
     * @param cause the underlying error, or null
     */
    public NcclUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
