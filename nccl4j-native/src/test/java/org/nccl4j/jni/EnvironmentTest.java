package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * setenv/getenv/unsetenv through the shim act on the live process environment (the one NCCL reads), which
 * {@link System#getenv} does not see: it is a copy taken when the JVM started.
 */
class EnvironmentTest {
    /** EINVAL on Linux. */
    static final int EINVAL = 22;

    @Test
    void setGetUnsetRoundTrip() {
        String name = "NCCL4J_TEST_ENV_" + ProcessHandle.current().pid();
        assertNull(NcclNative.getenv(name));
        try {
            assertEquals(0, NcclNative.setenv(name, "a value with spaces, = and ;", 1));
            assertEquals("a value with spaces, = and ;", NcclNative.getenv(name));
            assertNull(System.getenv(name), "System.getenv sees only the environment the JVM started with");

            assertEquals(0, NcclNative.setenv(name, "second", 0), "overwrite=0 succeeds ...");
            assertEquals("a value with spaces, = and ;", NcclNative.getenv(name), "... and keeps the value");
            assertEquals(0, NcclNative.setenv(name, "second", 1));
            assertEquals("second", NcclNative.getenv(name));
            assertEquals(0, NcclNative.setenv(name, "", 1));
            assertEquals("", NcclNative.getenv(name), "an empty value is a value");
        } finally {
            assertEquals(0, NcclNative.unsetenv(name));
        }
        assertNull(NcclNative.getenv(name));
        assertEquals(0, NcclNative.unsetenv(name), "unsetting an absent variable is not an error");
    }

    @Test
    void theStubSeesWhatSetenvWrites() {
        StubNccl.useFull();
        try {
            assertEquals(0, NcclNative.setenv("NCCL_STUB_RESULT_ncclGroupStart", "6", 1));
            assertEquals(6, NcclNative.ncclGroupStart());
            assertEquals(0, NcclNative.unsetenv("NCCL_STUB_RESULT_ncclGroupStart"));
            assertEquals(0, NcclNative.ncclGroupStart());
        } finally {
            NcclNative.unsetenv("NCCL_STUB_RESULT_ncclGroupStart");
        }
    }

    @ParameterizedTest(name = "setenv(\"{0}\")")
    @ValueSource(strings = {"A=B", "", "=leading"})
    void setenvWithAnInvalidNameFailsWithEinval(String name) {
        assertEquals(NcclNative.OS_ERROR, NcclNative.setenv(name, "x", 1));
        assertEquals(EINVAL, NcclNative.errno());
        assertNull(NcclNative.getenv("A"));
    }

    @ParameterizedTest(name = "unsetenv(\"{0}\")")
    @ValueSource(strings = {"A=B", ""})
    void unsetenvWithAnInvalidNameFailsWithEinval(String name) {
        assertEquals(NcclNative.OS_ERROR, NcclNative.unsetenv(name));
        assertEquals(EINVAL, NcclNative.errno());
    }

    @Test
    void setenvWithANullNameFailsWithEinval() {
        assertEquals(NcclNative.OS_ERROR, NcclNative.setenv(null, "x", 1));
        assertEquals(EINVAL, NcclNative.errno());
    }
}
