package org.nccl4j.jni;

import java.nio.file.Path;

/**
 * The test-only stub CUDA runtimes (src/test/c/cudart_stub.c, built into {@code <stubDir>/cudart/<case>/}): opens
 * one as nccl4j's CUDA runtime by the default search order, inside that case's directory, and puts things back.
 */
public final class StubCudart {
    private StubCudart() {
    }

    /** The directory of one case: cuda13, cuda12, both, old-driver, no-driver, cuda11, partial. */
    public static Path dir(String name) {
        return StubNccl.dir().resolve("cudart").resolve(name);
    }

    /** Opens, as {@link CudaRuntime#load()} would, libcudart.so.13 then libcudart.so.12 from case {@code name}. */
    public static CudaRuntime use(String name) {
        return CudaRuntime.reload(CudaRuntime.Choice.search(dir(name) + "/"));
    }

    /** Closes the stub and forgets it: the next {@link CudaRuntime#load()} searches anew. */
    public static void forget() {
        CudaRuntime.forget();
    }
}
