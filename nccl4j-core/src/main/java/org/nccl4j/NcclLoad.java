package org.nccl4j;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.launch.NcclEnvironment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The loaded NCCL library as the core first uses it ({@link Nccl#library()} is its public face): opened as
 * {@link NcclLibrary} documents, described once at INFO, the {@code nccl.*} system properties applied once before
 * NCCL first reads its environment, and NCCL's log installed.
 */
final class NcclLoad {
    private static final Logger LOG = LoggerFactory.getLogger("org.nccl4j.Nccl");   // the logger users know
    private static final AtomicBoolean LOGGED = new AtomicBoolean();

    private NcclLoad() {
    }

    /**
     * The loaded NCCL library, opening it on first call.
     *
     * @return the library (version, path, capabilities)
     * @throws org.nccl4j.jni.NcclUnavailableException when no NCCL can be opened
     */
    static NcclLibrary library() {
        NcclLibrary lib = NcclLibrary.load();
        if (LOGGED.compareAndSet(false, true)) {
            applySystemProperties();
            LOG.info("nccl4j: loaded NCCL {} from {} (chosen by {}); {} of {} entry points present",
                    lib.version(), lib.path(), lib.source(), lib.available().size(), NcclFunction.values().length);
        }
        NcclLog.install();   // before NCCL first logs, when it reads NCCL_DEBUG_FILE; a bad switch is refused each time
        return lib;
    }

    /**
     * Applies the {@code nccl.*} system properties (e.g. {@code -Dnccl.algo=Ring}) to the process environment,
     * once, before NCCL first reads it.
     */
    private static void applySystemProperties() {
        NcclEnvironment env = NcclEnvironment.fromSystemProperties();
        if (!env.settings().isEmpty()) {
            List<String> changed = env.apply();
            LOG.info("nccl4j: applied NCCL settings from system properties: {} (changed: {})", env.settings(), changed);
        }
    }
}
