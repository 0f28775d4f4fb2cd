package org.nccl4j.tools.harness;

import java.lang.reflect.Method;

/**
 * One rank of {@link DepartureScenarios} in a JVM of its own on the CPU, for {@link StartupScenariosOnStubTest}: the
 * fake CUDA runtime of nccl4j-core's tests installed (one device), then {@code DepartureScenarios.main} with the same
 * arguments. The JVM is started with {@code -Dnccl4j.library=} the stub NCCL.
 */
public final class StubRank {
    private StubRank() {
    }

    /**
     * Installs the fake CUDA runtime and runs the scenario.
     *
     * @param args DepartureScenarios' arguments
     * @throws Exception what the scenario throws
     */
    public static void main(String[] args) throws Exception {
        // FakeCuda.install is package-private in org.nccl4j (core's tests); this class lives in the harness's package
        Method install = Class.forName("org.nccl4j.FakeCuda").getDeclaredMethod("install", int.class);
        install.setAccessible(true);
        install.invoke(null, 1);
        DepartureScenarios.main(args);
    }
}
