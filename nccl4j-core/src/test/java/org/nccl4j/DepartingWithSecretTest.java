package org.nccl4j;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.JobSecret;

/**
 * Every test of {@link DepartingTest} again with {@code NCCL4J_JOB_SECRET} set, as
 * {@code org.nccl4j.control.LivenessSecurityTest} runs the channel's own tests again: its channels then authenticate
 * every connection. The secret is set before the fixture's set-up and restored after its tear-down.
 */
class DepartingWithSecretTest extends DepartingTest {
    @RegisterExtension
    final Secret secret = new Secret();

    /** Sets the secret around each test, outside its set-up and tear-down methods. */
    static final class Secret implements BeforeEachCallback, AfterEachCallback {
        private String before;

        @Override
        public void beforeEach(ExtensionContext context) {
            before = NcclNative.getenv(JobSecret.VARIABLE);
            NcclNative.setenv(JobSecret.VARIABLE, "nested-test-secret-0123456789abcdef", 1);
        }

        @Override
        public void afterEach(ExtensionContext context) {
            if (before == null) {
                NcclNative.unsetenv(JobSecret.VARIABLE);
            } else {
                NcclNative.setenv(JobSecret.VARIABLE, before, 1);
            }
        }
    }
}
