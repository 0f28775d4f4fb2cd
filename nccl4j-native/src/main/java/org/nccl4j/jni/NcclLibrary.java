package org.nccl4j.jni;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The NCCL library that nccl4j opened at run time: which file, which version, which entry points.
 *
 * <h2>Which library</h2>
 * The first of these that is set decides, and is the only one tried:
 * <ol>
 *   <li>the system property {@value #LIBRARY_PROPERTY} (a path, e.g.
 *       {@code -Dnccl4j.library=/opt/nccl/lib/libnccl.so.2});</li>
 *   <li>the environment variable {@value #LIBRARY_ENV} (a path);</li>
 *   <li>otherwise {@value #DEFAULT_NAME}, found by the system's default search ({@code LD_LIBRARY_PATH},
 *       the {@code ld.so} cache, the default directories).</li>
 * </ol>
 * An explicit choice that cannot be opened is an error; nccl4j does not silently fall back to another NCCL.
 *
 * <h2>Availability</h2>
 * As in Netty: {@link #isAvailable()}, {@link #ensureAvailability()} and {@link #unavailabilityCause()}. The
 * first of these calls (or {@link #load()}) opens the library once for the life of the process; a failure is
 * remembered and reported the same way each time.
 *
 * <h2>Entry points</h2>
 * Every entry point of {@link NcclFunction} that the library exports is resolved; one it lacks is reported by
 * {@link #has(NcclFunction)}, and calling it through {@link NcclNative} returns
 * {@link NcclNative#MISSING_SYMBOL}, which {@link #checkLinked(int, NcclFunction)} turns into an
 * {@link UnsupportedOperationException} naming the function, the loaded version and the library's path.
 */
public final class NcclLibrary {
    /** System property naming the NCCL library to load (a path); beats {@link #LIBRARY_ENV}. */
    public static final String LIBRARY_PROPERTY = "nccl4j.library";
    /** Environment variable naming the NCCL library to load (a path). */
    public static final String LIBRARY_ENV = "NCCL4J_LIBRARY";
    /** The file name looked up by the system's default search when neither setting is given. */
    public static final String DEFAULT_NAME = "libnccl.so.2";

    private static final String HOW_TO_POINT = "Install NCCL 2.19 or newer (for example the libnccl2 package, or "
            + "the nvidia-nccl wheel of your PyTorch), or point nccl4j at a library with -D" + LIBRARY_PROPERTY
            + "=/path/to/libnccl.so.2 or the environment variable " + LIBRARY_ENV + "=/path/to/libnccl.so.2.";

    private static NcclLibrary loaded;
    private static NcclUnavailableException failure;

    private final String path;
    private final String requested;
    private final String source;
    private final int versionCode;
    private final Set<NcclFunction> present;

    private NcclLibrary(String path, String requested, String source, int versionCode, Set<NcclFunction> present) {
        this.path = path;
        this.requested = requested;
        this.source = source;
        this.versionCode = versionCode;
        this.present = Collections.unmodifiableSet(present);
    }

    /** Where the library name came from, and the name. */
    record Choice(String name, String source) {
    }

    /** Applies the documented order to the two settings (either may be null or blank). */
    static Choice choose(String property, String environment) {
        if (property != null && !property.isBlank()) {
            return new Choice(property.strip(), "system property " + LIBRARY_PROPERTY);
        }
        if (environment != null && !environment.isBlank()) {
            return new Choice(environment.strip(), "environment variable " + LIBRARY_ENV);
        }
        return new Choice(DEFAULT_NAME, "the system's default library search");
    }

    /**
     * Opens the NCCL library chosen as documented above, once per process, and returns it.
     *
     * @return the loaded library
     * @throws NcclUnavailableException if it cannot be opened; the message says what was tried and how to fix it
     */
    public static synchronized NcclLibrary load() {
        if (loaded != null) {
            return loaded;
        }
        if (failure == null) {
            Choice choice = choose(System.getProperty(LIBRARY_PROPERTY), System.getenv(LIBRARY_ENV));
            try {
                loaded = open(choice);
            } catch (NcclUnavailableException e) {
                failure = e;
            }
        }
        if (loaded != null) {
            return loaded;
        }
        throw new NcclUnavailableException(failure.getMessage(), failure);
    }

    /** Test hook: closes whatever is open and opens {@code name} instead. Never used while NCCL is in use. */
    static synchronized NcclLibrary reload(String name) {
        loaded = null;
        failure = null;
        try {
            NcclNative.close();
        } catch (UnsatisfiedLinkError ignored) {
            // the JNI library itself did not load: open() reports it
        }
        Choice choice = name == null ? choose(System.getProperty(LIBRARY_PROPERTY), System.getenv(LIBRARY_ENV))
                : new Choice(name, "test");
        try {
            loaded = open(choice);
            return loaded;
        } catch (NcclUnavailableException e) {
            failure = e;
            throw e;
        }
    }

    private static NcclLibrary open(Choice choice) {
        int rc;
        try {
            rc = NcclNative.open(choice.name());
        } catch (UnsatisfiedLinkError | ExceptionInInitializerError | NoClassDefFoundError e) {
            throw new NcclUnavailableException("nccl4j's own native library (jniNcclNative, built by JavaCPP for "
                    + "linux-x86_64) could not be loaded, so no NCCL can be opened: " + e, e);
        }
        if (rc != 0) {
            String why = NcclNative.openMessage();
            String where = choice.source().startsWith("the system")
                    ? "searched for " + DEFAULT_NAME + " with " + choice.source()
                    + " (LD_LIBRARY_PATH, the ld.so cache, /lib and /usr/lib)"
                    : "tried " + choice.name() + " from the " + choice.source();
            throw new NcclUnavailableException("No NCCL library could be loaded: " + where + ": " + why + ". "
                    + HOW_TO_POINT, null);
        }
        int[] version = new int[1];
        int vrc = NcclNative.ncclGetVersion(version);
        String path = NcclNative.loadedPath();
        if (vrc != 0) {
            NcclNative.close();
            throw new NcclUnavailableException("The NCCL library " + path + " (from the " + choice.source()
                    + ") failed ncclGetVersion with status " + vrc + ". " + HOW_TO_POINT, null);
        }
        EnumSet<NcclFunction> present = EnumSet.noneOf(NcclFunction.class);
        for (NcclFunction f : NcclFunction.values()) {
            if (NcclNative.hasFunction(f.ordinal()) != 0) {
                present.add(f);
            }
        }
        return new NcclLibrary(path, choice.name(), choice.source(), version[0], present);
    }

    /**
     * Whether an NCCL library is (or can now be) loaded. Never throws.
     *
     * @return true when {@link #load()} succeeds
     */
    public static boolean isAvailable() {
        try {
            load();
            return true;
        } catch (NcclUnavailableException e) {
            return false;
        }
    }

    /**
     * Throws unless an NCCL library is loaded.
     *
     * @throws NcclUnavailableException with what was tried and how to fix it
     */
    public static void ensureAvailability() {
        load();
    }

    /**
     * Why NCCL is unavailable.
     *
     * @return the error of {@link #load()}, or null when the library is loaded
     */
    public static Throwable unavailabilityCause() {
        try {
            load();
            return null;
        } catch (NcclUnavailableException e) {
            return e.getCause() != null ? e.getCause() : e;
        }
    }

    /**
     * Turns the shim's own statuses into exceptions and passes NCCL's through.
     *
     * @param status what a {@link NcclNative} call returned
     * @param function the entry point that was called
     * @return {@code status}, when it is one of NCCL's ({@code >= 0})
     * @throws UnsupportedOperationException when the loaded NCCL lacks {@code function}
     * @throws NcclUnavailableException when no NCCL is loaded
     */
    public static int checkLinked(int status, NcclFunction function) {
        if (status >= 0) {
            return status;
        }
        throw linkError(status, function);
    }

    private static RuntimeException linkError(int status, NcclFunction function) {
        if (status == NcclNative.MISSING_SYMBOL) {
            NcclLibrary lib;
            synchronized (NcclLibrary.class) {
                lib = loaded;
            }
            return lib != null ? lib.missing(function)
                    : new UnsupportedOperationException(function + " is not exported by the loaded NCCL");
        }
        if (status == NcclNative.NOT_LOADED) {
            try {
                load();
            } catch (NcclUnavailableException e) {
                return e;
            }
            return new IllegalStateException(function + " was called before NcclLibrary.load() opened NCCL");
        }
        return new IllegalStateException(function + " returned the unknown shim status " + status);
    }

    /**
     * The exception for calling an entry point this library lacks.
     *
     * @param function the entry point
     * @return an exception naming the function, this library's version and path, and the version that added it
     */
    public UnsupportedOperationException missing(NcclFunction function) {
        return new UnsupportedOperationException(function + " is not available: the loaded NCCL " + version()
                + " (" + path + ") does not export it (it first appeared in NCCL " + function.since()
                + "). Load a newer NCCL with -D" + LIBRARY_PROPERTY + " or " + LIBRARY_ENV + ".");
    }

    /** @return {@code NCCL_VERSION_CODE} of the loaded library, e.g. 22803 for 2.28.3 */
    public int versionCode() {
        return versionCode;
    }

    /** @return the version as major.minor.patch, e.g. "2.28.3" */
    public String version() {
        return versionString(versionCode);
    }

    /**
     * Decodes an {@code NCCL_VERSION_CODE} (2.9 and later: X*10000+Y*100+Z; earlier: X*1000+Y*100+Z).
     *
     * @param code the code from {@code ncclGetVersion}
     * @return major.minor.patch
     */
    public static String versionString(int code) {
        if (code >= 10000) {
            return (code / 10000) + "." + (code % 10000 / 100) + "." + (code % 100);
        }
        return (code / 1000) + "." + (code % 1000 / 100) + "." + (code % 100);
    }

    /** @return the absolute path of the loaded library file (symbolic links resolved) */
    public String path() {
        return path;
    }

    /** @return the name that was asked of {@code dlopen} */
    public String requestedName() {
        return requested;
    }

    /** @return which setting chose the library: the system property, the environment variable or the default search */
    public String source() {
        return source;
    }

    /**
     * @param function an entry point
     * @return whether the loaded library exports it
     */
    public boolean has(NcclFunction function) {
        return present.contains(function);
    }

    /** @return the entry points the loaded library exports */
    public Set<NcclFunction> available() {
        return present;
    }

    /** @return the entry points nccl4j knows that the loaded library lacks */
    public Set<NcclFunction> missing() {
        EnumSet<NcclFunction> missing = EnumSet.allOf(NcclFunction.class);
        missing.removeAll(present);
        return Collections.unmodifiableSet(missing);
    }

    /**
     * A capability report: version, path, how it was chosen, and which entry points are present.
     *
     * @return several lines of text
     */
    public String report() {
        StringBuilder sb = new StringBuilder();
        sb.append("NCCL ").append(version()).append(" (version code ").append(versionCode).append(")\n");
        sb.append("library: ").append(path).append('\n');
        sb.append("chosen by: ").append(source).append(" (").append(requested).append(")\n");
        sb.append("entry points: ").append(present.size()).append(" of ").append(NcclFunction.values().length)
                .append(" present\n");
        sb.append("present: ").append(present.stream().map(Enum::name).collect(Collectors.joining(" "))).append('\n');
        Set<NcclFunction> missing = missing();
        sb.append("missing: ").append(missing.isEmpty() ? "none"
                : missing.stream().map(f -> f.name() + " (" + f.since() + "+)").collect(Collectors.joining(" ")));
        return sb.toString();
    }

    @Override
    public String toString() {
        return "NCCL " + version() + " at " + path;
    }
}
