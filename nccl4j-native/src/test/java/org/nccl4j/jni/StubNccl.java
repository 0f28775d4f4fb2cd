package org.nccl4j.jni;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Drives the test-only stub NCCL (src/test/c/nccl_stub.c): loads it, programs its results and reads the
 * record of the calls it received. Each recorded call is "name key=value ...".
 */
public final class StubNccl {
    /** The directory holding the stub libraries, set by the build (nccl4j.test.stubDir). */
    public static Path dir() {
        String d = System.getProperty("nccl4j.test.stubDir");
        if (d == null) {
            throw new IllegalStateException("system property nccl4j.test.stubDir is not set: run the tests with Maven");
        }
        return Path.of(d);
    }

    /** The full stub (every entry point, NCCL 2.28.3). */
    public static Path full() {
        return dir().resolve("libnccl-stub.so");
    }

    /**
     * The full stub reporting NCCL 2.30.7, the first release whose {@code ncclConfig_t} has every field nccl4j
     * sends (for tests that set config fields newer than 2.28.3, which nccl4j refuses to pass to an older NCCL).
     */
    public static Path latest() {
        return dir().resolve("libnccl-stub-2.30.7.so");
    }

    /** The NCCL 2.19.3 look-alike, lacking the entry points added after 2.19. */
    public static Path old() {
        return dir().resolve("libnccl-stub-old.so");
    }

    /** A shared library that is not NCCL. */
    public static Path notNccl() {
        return dir().resolve("libnot-nccl.so");
    }

    private final Path log;

    private StubNccl(Path log) {
        this.log = log;
    }

    /** Loads the full stub, unless already loaded, and starts an empty record. */
    public static StubNccl useFull() {
        return use(full());
    }

    /**
     * Loads the full stub anew even when it is already loaded, and starts an empty record: for tests that
     * loaded it in an unusual way (a programmed version, a failing ncclGetVersion), whose NcclLibrary must
     * not outlive them.
     */
    public static synchronized StubNccl reloadFull() {
        NcclLibrary.reload(full().toString());
        return fresh();
    }

    /**
     * Loads the full stub anew, reporting {@code versionCode} (NCCL_STUB_VERSION, read once at load) instead of
     * 2.28.3: an NCCL of that release that exports every entry point. Undo with {@link #reloadFull()}; no
     * communicator may be open across either call.
     */
    public static synchronized StubNccl reloadFullAs(int versionCode) {
        setenv("NCCL_STUB_VERSION", Integer.toString(versionCode));
        NcclLibrary.reload(full().toString());
        return fresh();
    }

    /** Loads the given stub library, unless already loaded, and starts an empty record. */
    public static synchronized StubNccl use(Path library) {
        NcclLibrary current = NcclNative.isLoaded() != 0 ? NcclLibrary.load() : null;
        if (current == null || !current.path().equals(realPath(library))) {
            NcclLibrary.reload(library.toString());
        }
        return fresh();
    }

    /**
     * The path as NcclLibrary reports a loaded library's (absolute, "..", "." and symbolic links resolved), so
     * that a stub directory given as ".../nccl4j-core/../nccl4j-native/..." matches.
     */
    public static String realPath(Path library) {
        try {
            return library.toRealPath().toString();
        } catch (IOException e) {
            return library.toAbsolutePath().normalize().toString();
        }
    }

    /** Clears programmed results and the record, keeping the loaded stub. */
    public static StubNccl fresh() {
        try {
            Path log = Files.createTempFile("nccl-stub", ".log");
            log.toFile().deleteOnExit();
            setenv("NCCL_STUB_LOG", log.toString());
            for (String v : List.of("NCCL_STUB_RESULT", "NCCL_STUB_VERSION", "NCCL_STUB_ASYNC_ERROR", "NCCL_STUB_ID_SEED")) {
                NcclNative.unsetenv(v);
            }
            for (NcclFunction f : NcclFunction.values()) {
                NcclNative.unsetenv("NCCL_STUB_RESULT_" + f.name());
                NcclNative.unsetenv("NCCL_STUB_SLEEP_MS_" + f.name());
            }
            return new StubNccl(log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void setenv(String name, String value) {
        if (NcclNative.setenv(name, value, 1) != 0) {
            throw new IllegalStateException("setenv " + name + " failed: errno " + NcclNative.errno());
        }
    }

    /** Makes {@code function} return {@code result} from now on. */
    public StubNccl result(NcclFunction function, int result) {
        setenv("NCCL_STUB_RESULT_" + function.name(), Integer.toString(result));
        return this;
    }

    /** Makes {@code function} block {@code millis} before it returns, from now on (a call that waits for peers). */
    public StubNccl sleep(NcclFunction function, long millis) {
        setenv("NCCL_STUB_SLEEP_MS_" + function.name(), Long.toString(millis));
        return this;
    }

    /** Makes every entry point return {@code result} unless one has its own. */
    public StubNccl resultForAll(int result) {
        setenv("NCCL_STUB_RESULT", Integer.toString(result));
        return this;
    }

    /** Makes ncclCommGetAsyncError report {@code result}. */
    public StubNccl asyncError(int result) {
        setenv("NCCL_STUB_ASYNC_ERROR", Integer.toString(result));
        return this;
    }

    /** Every recorded call, in order. */
    public List<String> calls() {
        try {
            return Files.exists(log) ? Files.readAllLines(log) : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The recorded calls of one entry point. */
    public List<String> calls(String function) {
        return calls().stream().filter(l -> l.equals(function) || l.startsWith(function + " ")).collect(Collectors.toList());
    }

    /** The arguments of the last recorded call of {@code function}, as a map. */
    public Map<String, String> last(String function) {
        List<String> c = calls(function);
        if (c.isEmpty()) {
            throw new AssertionError("the stub recorded no call of " + function + "; it recorded " + calls());
        }
        return parse(c.get(c.size() - 1));
    }

    /** Parses "name k=v k=v" into its k=v pairs. */
    public static Map<String, String> parse(String line) {
        return Stream.of(line.split(" ")).skip(1).map(kv -> kv.split("=", 2))
                .collect(Collectors.toMap(kv -> kv[0], kv -> kv.length > 1 ? kv[1] : "", (a, b) -> b,
                        java.util.LinkedHashMap::new));
    }

    /** "0x" + hex, as the stub prints pointers. */
    public static String hex(long v) {
        return "0x" + Long.toHexString(v);
    }
}
