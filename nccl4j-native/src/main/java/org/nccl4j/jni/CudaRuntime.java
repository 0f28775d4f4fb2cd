package org.nccl4j.jni;

import java.util.ArrayList;
import java.util.List;

/**
 * The CUDA runtime that nccl4j opened at run time: which file, which CUDA, which driver. nccl4j-core makes every
 * CUDA call through it ({@link CudaNative}), so that one build of nccl4j runs on a CUDA 12 or a CUDA 13 machine.
 *
 * <h2>Which runtime</h2>
 * The first of these that is set decides:
 * <ol>
 *   <li>a library: the system property {@value #LIBRARY_PROPERTY} or else the environment variable
 *       {@value #LIBRARY_ENV} (a path, e.g. {@code /usr/local/cuda-12.9/lib64/libcudart.so.12}); it is the only one
 *       tried;</li>
 *   <li>a CUDA major: the system property {@value #MAJOR_PROPERTY} or else the environment variable
 *       {@value #MAJOR_ENV}, {@code 12} or {@code 13}: {@code libcudart.so.12} or {@code libcudart.so.13} by the
 *       system's default library search, and only that one;</li>
 *   <li>otherwise {@code libcudart.so.13}, then {@code libcudart.so.12}, by the system's default search
 *       ({@code LD_LIBRARY_PATH}, the {@code ld.so} cache, the default directories): the first that opens and that
 *       the driver supports is taken; a CUDA 13 runtime under a driver older than CUDA 13 (below 580) is passed
 *       over for the CUDA 12 one.</li>
 * </ol>
 * A runtime is refused when it is not CUDA 12 or 13, when it is not the major that {@value #MAJOR_ENV} asks for,
 * when it lacks a call of {@link CudaNative}, or when the installed driver is older than its major. An explicit
 * choice that is refused is an error: nccl4j does not fall back to another runtime. A library given as a path with
 * {@value #MAJOR_ENV} set too must be that major.
 *
 * <h2>Availability</h2>
 * As {@link NcclLibrary}: {@link #isAvailable()}, {@link #ensureAvailability()} and {@link #unavailabilityCause()};
 * the first of these (or {@link #load()}) opens the runtime once for the life of the process, and a failure is
 * remembered and reported the same way each time, as a {@link CudaUnavailableException} whose message names every
 * library tried, why each was refused, and the fix.
 */
public final class CudaRuntime {
    /** System property naming the CUDA runtime library to open (a path); beats {@link #LIBRARY_ENV}. */
    public static final String LIBRARY_PROPERTY = "nccl4j.cudart";
    /** Environment variable naming the CUDA runtime library to open (a path). */
    public static final String LIBRARY_ENV = "NCCL4J_CUDART";
    /** System property naming the CUDA major to open, 12 or 13; beats {@link #MAJOR_ENV}. */
    public static final String MAJOR_PROPERTY = "nccl4j.cuda";
    /** Environment variable naming the CUDA major to open, 12 or 13. */
    public static final String MAJOR_ENV = "NCCL4J_CUDA";
    /** The CUDA majors nccl4j runs on, in the order the default search tries them. */
    public static final List<Integer> MAJORS = List.of(13, 12);

    private static final String SEARCHED = " by the system's default library search (LD_LIBRARY_PATH, the ld.so "
            + "cache, /lib and /usr/lib)";

    private static CudaRuntime loaded;
    private static CudaUnavailableException failure;

    private final String path;
    private final String requested;
    private final String source;
    private final int runtimeVersion;
    private final int driverVersion;

    private CudaRuntime(String path, String requested, String source, int runtimeVersion, int driverVersion) {
        this.path = path;
        this.requested = requested;
        this.source = source;
        this.runtimeVersion = runtimeVersion;
        this.driverVersion = driverVersion;
    }

    /**
     * The libraries to try, in order, and what chose them.
     *
     * @param names paths or file names for {@code dlopen}
     * @param source the setting that chose them, for messages
     * @param major the CUDA major asked for (12 or 13), or 0 for either
     * @param explicit whether a setting named them (a refusal is then final), rather than the default search
     */
    record Choice(List<String> names, String source, int major, boolean explicit) {
        /** The default search: libcudart.so.13, then .so.12, each prefixed with {@code prefix} (tests: a dir). */
        static Choice search(String prefix) {
            return new Choice(MAJORS.stream().map(m -> prefix + fileName(m)).toList(),
                    "the system's default library search", 0, false);
        }
    }

    /** The runtime's file name for a CUDA major: {@code libcudart.so.12}. */
    static String fileName(int major) {
        return "libcudart.so." + major;
    }

    /**
     * Applies the documented order to the four settings (each may be null or blank).
     *
     * @throws CudaUnavailableException when the major is not 12 or 13
     */
    static Choice choose(String libraryProperty, String libraryEnv, String majorProperty, String majorEnv) {
        int major = 0;
        String majorSource = null;
        if (majorProperty != null && !majorProperty.isBlank()) {
            majorSource = "system property " + MAJOR_PROPERTY + "=" + majorProperty.strip();
            major = parseMajor(majorProperty.strip(), "-D" + MAJOR_PROPERTY);
        } else if (majorEnv != null && !majorEnv.isBlank()) {
            majorSource = "environment variable " + MAJOR_ENV + "=" + majorEnv.strip();
            major = parseMajor(majorEnv.strip(), MAJOR_ENV);
        }
        if (libraryProperty != null && !libraryProperty.isBlank()) {
            return new Choice(List.of(libraryProperty.strip()), "system property " + LIBRARY_PROPERTY, major, true);
        }
        if (libraryEnv != null && !libraryEnv.isBlank()) {
            return new Choice(List.of(libraryEnv.strip()), "environment variable " + LIBRARY_ENV, major, true);
        }
        if (major != 0) {
            return new Choice(List.of(fileName(major)), majorSource, major, true);
        }
        return Choice.search("");
    }

    private static int parseMajor(String value, String setting) {
        for (int m : MAJORS) {
            if (value.equals(Integer.toString(m))) {
                return m;
            }
        }
        throw new CudaUnavailableException("The CUDA runtime could not be loaded: " + setting + "=" + value
                + " is not a CUDA major nccl4j runs on: use 12 (opens libcudart.so.12) or 13 (libcudart.so.13), "
                + "or unset it to let nccl4j choose", null);
    }

    /**
     * Opens the CUDA runtime chosen as documented above, once per process, and returns it.
     *
     * @return the opened runtime
     * @throws CudaUnavailableException if none can be opened; the message says what was tried and how to fix it
     */
    public static synchronized CudaRuntime load() {
        if (loaded != null) {
            return loaded;
        }
        if (failure == null) {
            try {
                loaded = open(choose(System.getProperty(LIBRARY_PROPERTY), System.getenv(LIBRARY_ENV),
                        System.getProperty(MAJOR_PROPERTY), System.getenv(MAJOR_ENV)));
            } catch (CudaUnavailableException e) {
                failure = e;
            }
        }
        if (loaded != null) {
            return loaded;
        }
        throw new CudaUnavailableException(failure.getMessage(), failure);
    }

    /** Test hook: closes whatever is open and opens what {@code choice} names instead. */
    static synchronized CudaRuntime reload(Choice choice) {
        loaded = null;
        failure = null;
        try {
            CudaNative.close();
        } catch (UnsatisfiedLinkError ignored) {
            // the JNI library itself did not load: open() reports it
        }
        try {
            loaded = open(choice);
            return loaded;
        } catch (CudaUnavailableException e) {
            failure = e;
            throw e;
        }
    }

    /** Test hook: closes whatever is open and forgets it and any failure, as if nothing had been loaded yet. */
    static synchronized void forget() {
        loaded = null;
        failure = null;
        CudaNative.close();
    }

    private static CudaRuntime open(Choice choice) {
        List<String> refusals = new ArrayList<>();
        for (String name : choice.names()) {
            String refused = tryOpen(name, choice.major());
            if (refused == null) {
                int[] runtime = new int[1];
                int[] driver = new int[1];
                CudaNative.cudaRuntimeGetVersion(runtime);
                CudaNative.cudaDriverGetVersion(driver);
                return new CudaRuntime(CudaNative.loadedPath(), name, choice.source(), runtime[0], driver[0]);
            }
            refusals.add(refused);
        }
        throw new CudaUnavailableException(failureMessage(choice, refusals), null);
    }

    /** Opens {@code name} and keeps it open when it is usable; else closes it and returns why not. */
    private static String tryOpen(String name, int major) {
        int rc;
        try {
            rc = CudaNative.open(name);
        } catch (UnsatisfiedLinkError | ExceptionInInitializerError | NoClassDefFoundError e) {
            throw new CudaUnavailableException("The CUDA runtime could not be loaded: nccl4j's own native library "
                    + "(jniCudaNative, built by JavaCPP for linux-x86_64) could not be loaded, so no CUDA runtime can "
                    + "be opened: " + e, e);
        }
        if (rc != 0) {
            String why = CudaNative.openMessage();
            return why.startsWith(name) ? why : name + ": " + why;
        }
        String path = CudaNative.loadedPath();
        int[] v = new int[1];
        int vrc = CudaNative.cudaRuntimeGetVersion(v);
        String why = null;
        if (vrc != 0) {
            why = "cudaRuntimeGetVersion failed with status " + vrc;
        } else if (!MAJORS.contains(v[0] / 1000)) {
            why = "it is CUDA " + versionString(v[0]) + ": nccl4j runs on CUDA 12 and 13";
        } else if (major != 0 && v[0] / 1000 != major) {
            why = "it is CUDA " + versionString(v[0]) + ", not the CUDA " + major + " that " + MAJOR_ENV
                    + " (or -D" + MAJOR_PROPERTY + ") asks for";
        } else {
            List<String> missing = new ArrayList<>();
            for (int i = 0; i < CudaNative.FUNCTIONS.size(); i++) {
                if (CudaNative.hasFunction(i) == 0) {
                    missing.add(CudaNative.FUNCTIONS.get(i));
                }
            }
            int[] d = new int[1];
            if (!missing.isEmpty()) {
                why = "it lacks " + String.join(", ", missing) + ": not a CUDA 12 or 13 runtime";
            } else if (CudaNative.cudaDriverGetVersion(d) == 0 && d[0] > 0 && d[0] / 1000 < v[0] / 1000) {
                why = "it is CUDA " + versionString(v[0]) + " but the NVIDIA driver supports CUDA "
                        + versionString(d[0]) + " at most (CUDA " + v[0] / 1000 + " needs a driver "
                        + minimumDriver(v[0] / 1000) + ")";
            }
        }
        if (why == null) {
            return null;
        }
        CudaNative.close();
        return name + " (" + path + "): " + why;
    }

    private static String failureMessage(Choice choice, List<String> refusals) {
        String reasons = String.join("; ", refusals);
        if (!choice.explicit()) {
            return "The CUDA runtime could not be loaded: no usable " + String.join(" or ", choice.names())
                    + " found" + SEARCHED + ": " + reasons + ". Install the CUDA 13 runtime (NVIDIA driver "
                    + minimumDriver(13) + ") or the CUDA 12 runtime (driver " + minimumDriver(12) + "), for example "
                    + "the cuda-cudart-13-0 or cuda-cudart-12-9 package, and add its lib directory to "
                    + "LD_LIBRARY_PATH, or set " + LIBRARY_ENV + "=/path/to/libcudart.so.12 (or .13).";
        }
        if (choice.source().startsWith("environment variable " + LIBRARY_ENV)
                || choice.source().startsWith("system property " + LIBRARY_PROPERTY)) {
            return "The CUDA runtime could not be loaded: " + choice.names().get(0) + " from the " + choice.source()
                    + " was refused: " + reasons + ". Point " + LIBRARY_ENV + " (or -D" + LIBRARY_PROPERTY + ") at a "
                    + "CUDA 12 or 13 runtime (libcudart.so.12 or libcudart.so.13) that the driver supports, or unset "
                    + "it to let nccl4j search.";
        }
        int major = choice.major();
        return "The CUDA runtime could not be loaded: " + fileName(major) + " not found or refused (the "
                + choice.source() + " asks for CUDA " + major + "; searched" + SEARCHED + "): " + reasons
                + ". Install the CUDA " + major + " runtime (for example the cuda-cudart-" + major + "-x package; "
                + "NVIDIA driver " + minimumDriver(major) + ") and add its lib directory to LD_LIBRARY_PATH, or set "
                + LIBRARY_ENV + "=/path/to/" + fileName(major) + ", or unset " + MAJOR_ENV
                + " to let nccl4j choose.";
    }

    /** NVIDIA's minimum Linux driver for a CUDA major, as a phrase. */
    static String minimumDriver(int major) {
        return major == 12 ? ">= 525.60.13" : ">= 580";
    }

    /**
     * Decodes a CUDA version as {@code cudaRuntimeGetVersion} and {@code cudaDriverGetVersion} give it.
     *
     * @param code 1000 * major + 10 * minor, e.g. 12040
     * @return major.minor, e.g. "12.4"
     */
    public static String versionString(int code) {
        return (code / 1000) + "." + (code % 1000 / 10);
    }

    /**
     * Whether a CUDA runtime is (or can now be) opened. Never throws.
     *
     * @return true when {@link #load()} succeeds
     */
    public static boolean isAvailable() {
        try {
            load();
            return true;
        } catch (CudaUnavailableException e) {
            return false;
        }
    }

    /**
     * Throws unless a CUDA runtime is opened.
     *
     * @throws CudaUnavailableException with what was tried and how to fix it
     */
    public static void ensureAvailability() {
        load();
    }

    /**
     * Why no CUDA runtime is available.
     *
     * @return the error of {@link #load()}, or null when a runtime is opened
     */
    public static Throwable unavailabilityCause() {
        try {
            load();
            return null;
        } catch (CudaUnavailableException e) {
            return e.getCause() != null ? e.getCause() : e;
        }
    }

    /** @return the runtime's version, 1000 * major + 10 * minor (12090 for 12.9) */
    public int runtimeVersion() {
        return runtimeVersion;
    }

    /** @return the CUDA major of the runtime: 12 or 13 */
    public int major() {
        return runtimeVersion / 1000;
    }

    /** @return the newest CUDA the driver supports, as {@link #runtimeVersion()}; 0 when no driver is installed */
    public int driverVersion() {
        return driverVersion;
    }

    /** @return the absolute path of the opened library file (symbolic links resolved) */
    public String path() {
        return path;
    }

    /** @return the name that was asked of {@code dlopen} */
    public String requestedName() {
        return requested;
    }

    /** @return which setting chose the runtime: a system property, an environment variable or the default search */
    public String source() {
        return source;
    }

    /**
     * One line for logs and reports.
     *
     * @return e.g. "CUDA runtime 12.4 (/usr/lib/x86_64-linux-gnu/libcudart.so.12.4.127), driver CUDA 13.0, chosen by
     *         the system's default library search"
     */
    public String report() {
        return "CUDA runtime " + versionString(runtimeVersion) + " (" + path + "), driver "
                + (driverVersion == 0 ? "none" : "CUDA " + versionString(driverVersion)) + ", chosen by " + source;
    }

    @Override
    public String toString() {
        return "CUDA runtime " + versionString(runtimeVersion) + " at " + path;
    }
}
