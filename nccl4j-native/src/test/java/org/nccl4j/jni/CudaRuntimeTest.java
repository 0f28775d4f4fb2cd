package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Which CUDA runtime nccl4j opens (CUDA 12 or 13), and what it says when it cannot: the settings' order, the
 * default search with the driver check, and every refusal, against the stub runtimes of build-stubs.sh.
 */
class CudaRuntimeTest {

    @AfterEach
    void forget() {
        StubCudart.forget();
    }

    private static String path(String stubCase, String file) {
        return StubCudart.dir(stubCase).resolve(file).toString();
    }

    // ---- the settings

    @Test
    void withNothingSetTheDefaultSearchTriesCuda13ThenCuda12() {
        CudaRuntime.Choice c = CudaRuntime.choose(null, " ", "", null);
        assertEquals(List.of("libcudart.so.13", "libcudart.so.12"), c.names());
        assertEquals(0, c.major());
        assertFalse(c.explicit());
        assertEquals("the system's default library search", c.source());
    }

    @Test
    void aMajorNamesOnlyThatRuntime() {
        CudaRuntime.Choice c = CudaRuntime.choose(null, null, null, " 12 ");
        assertEquals(List.of("libcudart.so.12"), c.names());
        assertEquals(12, c.major());
        assertTrue(c.explicit());
        assertEquals("environment variable NCCL4J_CUDA=12", c.source());
        CudaRuntime.Choice p = CudaRuntime.choose(null, null, "13", "12");
        assertEquals(List.of("libcudart.so.13"), p.names(), "the system property beats the environment variable");
        assertEquals("system property nccl4j.cuda=13", p.source());
    }

    @Test
    void aLibraryBeatsAMajorAndKeepsItForTheCheck() {
        CudaRuntime.Choice env = CudaRuntime.choose(null, "/opt/cuda/libcudart.so.12", null, "12");
        assertEquals(List.of("/opt/cuda/libcudart.so.12"), env.names());
        assertEquals("environment variable NCCL4J_CUDART", env.source());
        assertEquals(12, env.major());
        CudaRuntime.Choice prop = CudaRuntime.choose("/a/libcudart.so.13", "/b/libcudart.so.12", null, null);
        assertEquals(List.of("/a/libcudart.so.13"), prop.names());
        assertEquals("system property nccl4j.cudart", prop.source());
        assertEquals(0, prop.major());
    }

    @Test
    void aMajorOtherThan12Or13IsRefusedWithTheValuesAllowed() {
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class,
                () -> CudaRuntime.choose(null, null, null, "11"));
        assertEquals("The CUDA runtime could not be loaded: NCCL4J_CUDA=11 is not a CUDA major nccl4j runs on: use "
                + "12 (opens libcudart.so.12) or 13 (libcudart.so.13), or unset it to let nccl4j choose",
                e.getMessage());
        CudaUnavailableException p = assertThrows(CudaUnavailableException.class,
                () -> CudaRuntime.choose(null, null, "cuda12", null));
        assertTrue(p.getMessage().contains("-Dnccl4j.cuda=cuda12 is not a CUDA major"), p.getMessage());
    }

    // ---- the default search

    @Test
    void withBothRuntimesAndACuda13DriverCuda13IsTaken() {
        CudaRuntime rt = StubCudart.use("both");
        assertEquals(13, rt.major());
        assertEquals(13000, rt.runtimeVersion());
        assertEquals(13000, rt.driverVersion());
        assertEquals(path("both", "libcudart.so.13"), rt.path());
        assertEquals(3, deviceCount(), "the calls reach the CUDA 13 stub (3 devices)");
    }

    @Test
    void withOnlyCuda12ItIsTaken() {
        CudaRuntime rt = StubCudart.use("cuda12");
        assertEquals(12, rt.major());
        assertEquals("12.9", CudaRuntime.versionString(rt.runtimeVersion()));
        assertEquals(2, deviceCount(), "the calls reach the CUDA 12 stub (2 devices)");
        assertEquals("CUDA runtime 12.9 (" + path("cuda12", "libcudart.so.12") + "), driver CUDA 13.0, chosen by "
                + "the system's default library search", rt.report());
    }

    @Test
    void underADriverOlderThanCuda13TheCuda12RuntimeIsTakenInstead() {
        CudaRuntime rt = StubCudart.use("old-driver");
        assertEquals(12, rt.major());
        assertEquals(12080, rt.driverVersion());
        assertEquals(2, deviceCount());
    }

    @Test
    void withNoDriverTheRuntimeIsStillOpenedAndTheCallsSaySo() {
        CudaRuntime rt = StubCudart.use("no-driver");
        assertEquals(12, rt.major());
        assertEquals(0, rt.driverVersion());
        assertTrue(rt.report().contains("driver none"), rt.report());
    }

    @Test
    void withNeitherRuntimeTheMessageNamesBothAndTheFix() {
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> StubCudart.use("cuda11"));
        String m = e.getMessage();
        String dir = StubCudart.dir("cuda11") + "/";
        assertTrue(m.startsWith("The CUDA runtime could not be loaded: no usable " + dir + "libcudart.so.13 or " + dir
                + "libcudart.so.12 found by the system's default library search"), m);
        assertTrue(m.contains("found by the system's default library search (LD_LIBRARY_PATH, the ld.so cache, "
                + "/lib and /usr/lib): " + dir + "libcudart.so.13: cannot open shared object file"), m);
        assertTrue(m.endsWith("Install the CUDA 13 runtime (NVIDIA driver >= 580) or the CUDA 12 runtime (driver "
                + ">= 525.60.13), for example the cuda-cudart-13-0 or cuda-cudart-12-9 package, and add its lib "
                + "directory to LD_LIBRARY_PATH, or set NCCL4J_CUDART=/path/to/libcudart.so.12 (or .13)."), m);
        assertFalse(CudaRuntime.isAvailable(), "the failure is remembered");
        assertEquals(m, CudaRuntime.unavailabilityCause().getMessage());
        CudaUnavailableException again = assertThrows(CudaUnavailableException.class, CudaRuntime::load);
        assertEquals(m, again.getMessage());
    }

    // ---- explicit choices are final

    @Test
    void anAskedForMajorThatIsNotThereSaysWhatToInstall() {
        CudaRuntime.Choice c = new CudaRuntime.Choice(List.of(path("cuda13", "libcudart.so.12")),
                "environment variable NCCL4J_CUDA=12", 12, true);
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> CudaRuntime.reload(c));
        String m = e.getMessage();
        assertTrue(m.startsWith("The CUDA runtime could not be loaded: libcudart.so.12 not found or refused (the "
                + "environment variable NCCL4J_CUDA=12 asks for CUDA 12;"), m);
        assertTrue(m.contains("cannot open shared object file"), m);
        assertTrue(m.endsWith("Install the CUDA 12 runtime (for example the cuda-cudart-12-x package; NVIDIA driver "
                + ">= 525.60.13) and add its lib directory to LD_LIBRARY_PATH, or set "
                + "NCCL4J_CUDART=/path/to/libcudart.so.12, or unset NCCL4J_CUDA to let nccl4j choose."), m);
    }

    @Test
    void aCuda13RuntimeNamedUnderAnOlderDriverIsRefusedNotReplaced() {
        String lib = path("old-driver", "libcudart.so.13");
        CudaRuntime.Choice c = new CudaRuntime.Choice(List.of(lib), "environment variable NCCL4J_CUDART", 0, true);
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> CudaRuntime.reload(c));
        assertEquals("The CUDA runtime could not be loaded: " + lib + " from the environment variable NCCL4J_CUDART "
                + "was refused: " + lib + " (" + lib + "): it is CUDA 13.0 but the NVIDIA driver supports CUDA 12.8 "
                + "at most (CUDA 13 needs a driver >= 580). Point NCCL4J_CUDART (or -Dnccl4j.cudart) at a CUDA 12 "
                + "or 13 runtime (libcudart.so.12 or libcudart.so.13) that the driver supports, or unset it to let "
                + "nccl4j search.", e.getMessage());
        assertEquals(CudaNative.NOT_LOADED, CudaNative.cudaGetDeviceCount(new int[1]), "the refused one was closed");
    }

    @Test
    void aLibraryOfTheOtherMajorThanTheOneAskedForIsRefused() {
        String lib = path("cuda13", "libcudart.so.13");
        CudaRuntime.Choice c = new CudaRuntime.Choice(List.of(lib), "environment variable NCCL4J_CUDART", 12, true);
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> CudaRuntime.reload(c));
        assertTrue(e.getMessage().contains("it is CUDA 13.0, not the CUDA 12 that NCCL4J_CUDA (or -Dnccl4j.cuda) "
                + "asks for"), e.getMessage());
    }

    @Test
    void cuda11AnIncompleteRuntimeAndALibraryThatIsNoRuntimeAreRefused() {
        String v11 = path("cuda11", "libcudart.so.11.0");
        assertTrue(refusal(v11).contains(v11 + " (" + v11 + "): it is CUDA 11.8: nccl4j runs on CUDA 12 and 13"));
        String partial = path("partial", "libcudart.so.12");
        assertTrue(refusal(partial).contains("it lacks cudaGraphInstantiate: not a CUDA 12 or 13 runtime"),
                refusal(partial));
        String notCuda = StubNccl.notNccl().toString();
        assertTrue(refusal(notCuda).contains("refused: " + notCuda + " does not export cudaRuntimeGetVersion: it "
                + "is not a CUDA runtime"), refusal(notCuda));
    }

    private static String refusal(String lib) {
        CudaRuntime.Choice c = new CudaRuntime.Choice(List.of(lib), "system property nccl4j.cudart", 0, true);
        return assertThrows(CudaUnavailableException.class, () -> CudaRuntime.reload(c)).getMessage();
    }

    // ---- the calls

    @Test
    void theShimsTableIsCudaNativesList() {
        assertEquals(CudaNative.FUNCTIONS.size(), CudaNative.functionCount());
        for (int i = 0; i < CudaNative.FUNCTIONS.size(); i++) {
            assertEquals(CudaNative.FUNCTIONS.get(i), CudaNative.functionName(i), "entry " + i);
        }
        assertNull(CudaNative.functionName(CudaNative.FUNCTIONS.size()));
    }

    @Test
    void callsReachTheOpenedRuntimeAndNoneIsMadeBeforeOne() {
        StubCudart.forget();
        assertEquals(CudaNative.NOT_LOADED, CudaNative.cudaSetDevice(0));
        assertNull(CudaNative.cudaGetErrorName(1));
        StubCudart.use("cuda12");
        assertEquals(0, CudaNative.cudaSetDevice(1));
        long[] p = new long[1];
        assertEquals(0, CudaNative.cudaMalloc(p, 64));
        assertTrue(p[0] != 0);
        int[] attr = new int[2];
        assertEquals(0, CudaNative.cudaPointerGetAttributes(p[0] + 8, attr));
        assertEquals(List.of(2, 1), List.of(attr[0], attr[1]), "device memory (2) of device 1");
        assertEquals(0, CudaNative.cudaMemset(p[0], 7, 64));
        long[] s = new long[1];
        assertEquals(0, CudaNative.cudaStreamCreateWithFlags(s, 1));
        long[] g = new long[1];
        long[] exec = new long[1];
        assertEquals(0, CudaNative.cudaStreamBeginCapture(s[0], 1));
        int[] capturing = new int[1];
        assertEquals(0, CudaNative.cudaStreamIsCapturing(s[0], capturing));
        assertEquals(1, capturing[0]);
        assertEquals(0, CudaNative.cudaStreamEndCapture(s[0], g));
        assertEquals(0, CudaNative.cudaGraphInstantiate(exec, g[0], 0));
        assertTrue(exec[0] != 0);
        assertEquals(0, CudaNative.cudaGraphExecDestroy(exec[0]));
        assertEquals(0, CudaNative.cudaGraphDestroy(g[0]));
        assertEquals(0, CudaNative.cudaStreamDestroy(s[0]));
        assertEquals(0, CudaNative.cudaFree(p[0]));
        assertEquals(101, CudaNative.cudaSetDevice(5));
        assertEquals("cudaErrorInvalidDevice", CudaNative.cudaGetErrorName(101));
        assertEquals("invalid device ordinal (stub CUDA runtime)", CudaNative.cudaGetErrorString(101));
    }

    private static int deviceCount() {
        int[] n = new int[1];
        assertEquals(0, CudaNative.cudaGetDeviceCount(n));
        return n[0];
    }
}
