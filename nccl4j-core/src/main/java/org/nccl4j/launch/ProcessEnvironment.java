package org.nccl4j.launch;

import org.nccl4j.jni.NcclNative;

/**
 * The live environment of this process, as NCCL sees it ({@code getenv}), with a way to write it
 * ({@code setenv}). Java's {@link System#getenv()} is a copy taken when the JVM started and cannot be written,
 * so settings for NCCL go through the C library. Tests substitute a map-backed implementation.
 */
public interface ProcessEnvironment {
    /**
     * The current value of {@code name}.
     *
     * @param name the variable
     * @return its value, or null when it is not set
     */
    String get(String name);

    /**
     * Sets {@code name} to {@code value}, replacing any current value.
     *
     * @param name the variable
     * @param value its new value
     * @throws IllegalStateException when the variable cannot be written
     */
    void set(String name, String value);

    /**
     * The process environment, read and written through nccl4j's native layer.
     *
     * @return the live environment
     */
    static ProcessEnvironment live() {
        return Native.INSTANCE;
    }

    /**
     * The process environment for reading only: the live one when nccl4j's native layer loads, else the JVM's
     * copy from {@link System#getenv(String)} (which misses changes made after the JVM started).
     *
     * @return the environment to read
     */
    static ProcessEnvironment liveOrJvmCopy() {
        try {
            NcclNative.getenv("PATH");
            return Native.INSTANCE;
        } catch (LinkageError e) {
            return new ProcessEnvironment() {
                @Override
                public String get(String name) {
                    return System.getenv(name);
                }

                @Override
                public void set(String name, String value) {
                    throw new IllegalStateException("cannot set " + name + ": nccl4j's native library did not load ("
                            + e + "); set the variable before starting the JVM instead");
                }
            };
        }
    }

    /** The implementation over {@link NcclNative#getenv}/{@link NcclNative#setenv}. */
    final class Native implements ProcessEnvironment {
        static final Native INSTANCE = new Native();

        private Native() {
        }

        @Override
        public String get(String name) {
            return call(() -> NcclNative.getenv(name), name);
        }

        @Override
        public void set(String name, String value) {
            int status = call(() -> NcclNative.setenv(name, value, 1), name);
            if (status != 0) {
                throw new IllegalStateException("setenv(" + name + ") failed with errno " + NcclNative.errno()
                        + "; check that the name and value are valid for the C library");
            }
        }

        private static <T> T call(java.util.function.Supplier<T> f, String name) {
            try {
                return f.get();
            } catch (LinkageError e) {
                throw new IllegalStateException("cannot access the process environment for " + name
                        + ": nccl4j's native library did not load (" + e
                        + "); check that nccl4j-native's linux-x86_64 jar is on the class path", e);
            }
        }
    }
}
