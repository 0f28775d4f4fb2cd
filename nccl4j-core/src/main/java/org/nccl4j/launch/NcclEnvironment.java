package org.nccl4j.launch;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.nccl4j.jni.NcclNative;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A validated, immutable set of NCCL environment variables, and the means to put them into this process's
 * environment where NCCL reads them.
 *
 * <p>NCCL takes most of its tuning from environment variables ({@code NCCL_ALGO}, {@code NCCL_DEBUG},
 * {@code NCCL_SOCKET_IFNAME}, ...) which it reads when it initializes. Java cannot change its own environment
 * ({@link System#getenv()} is a frozen copy), and NCCL silently ignores a misspelled value such as
 * {@code NCCL_ALGO=Rnig}. This class checks each value against what NCCL accepts, then {@link #apply()}
 * writes them with the C library's {@code setenv}, so they must be applied <b>before the first NCCL call</b>
 * of the process. Applying after NCCL has initialized still writes the variables but logs a warning for each
 * one that changed, since NCCL will not see them.
 *
 * <pre>{@code
 * NcclEnvironment env = NcclEnvironment.builder()
 *         .algo(NcclEnvironment.Algorithm.RING, NcclEnvironment.Algorithm.TREE)
 *         .debug(NcclEnvironment.DebugLevel.WARN)
 *         .socketIfname("^docker,lo")
 *         .systemProperties(System.getProperties())   // -Dnccl.debug.subsys=INIT,NET overrides the above
 *         .build();
 * env.apply();
 * }</pre>
 *
 * <p>System properties map to variables by one rule: {@code nccl.} followed by lower-case words separated by
 * dots or underscores becomes {@code NCCL_} followed by the same words in upper case separated by underscores,
 * so {@code -Dnccl.algo=Ring} sets {@code NCCL_ALGO} and {@code -Dnccl.debug.subsys=INIT} (or
 * {@code -Dnccl.debug_subsys=INIT}) sets {@code NCCL_DEBUG_SUBSYS}. See {@link #variableForProperty(String)}.
 *
 * <p>Instances are immutable and thread-safe; {@link #apply()} itself is not atomic with respect to other
 * threads writing the same variables.
 */
public final class NcclEnvironment {
    private static final Logger LOG = LoggerFactory.getLogger(NcclEnvironment.class);

    /** {@code NCCL_ALGO}: the algorithms NCCL may use. */
    public static final String ALGO = "NCCL_ALGO";
    /** {@code NCCL_PROTO}: the protocols NCCL may use. */
    public static final String PROTO = "NCCL_PROTO";
    /** {@code NCCL_DEBUG}: the log level. */
    public static final String DEBUG = "NCCL_DEBUG";
    /** {@code NCCL_DEBUG_SUBSYS}: the subsystems that log. */
    public static final String DEBUG_SUBSYS = "NCCL_DEBUG_SUBSYS";
    /** {@code NCCL_DEBUG_FILE}: where NCCL writes its log ({@code %h} host, {@code %p} process id). */
    public static final String DEBUG_FILE = "NCCL_DEBUG_FILE";
    /** {@code NCCL_SOCKET_IFNAME}: the IP interfaces NCCL may use. */
    public static final String SOCKET_IFNAME = "NCCL_SOCKET_IFNAME";
    /** {@code NCCL_IB_HCA}: the InfiniBand adapters (and ports) NCCL may use. */
    public static final String IB_HCA = "NCCL_IB_HCA";
    /** {@code NCCL_IB_DISABLE}: 1 turns the InfiniBand/RoCE transport off. */
    public static final String IB_DISABLE = "NCCL_IB_DISABLE";
    /** {@code NCCL_P2P_DISABLE}: 1 turns direct GPU-to-GPU transport off. */
    public static final String P2P_DISABLE = "NCCL_P2P_DISABLE";
    /** {@code NCCL_P2P_LEVEL}: the farthest topology distance at which GPUs use P2P. */
    public static final String P2P_LEVEL = "NCCL_P2P_LEVEL";
    /** {@code NCCL_SHM_DISABLE}: 1 turns the shared-memory transport off. */
    public static final String SHM_DISABLE = "NCCL_SHM_DISABLE";
    /** {@code NCCL_NET_GDR_LEVEL}: the farthest distance between NIC and GPU at which GPUDirect RDMA is used. */
    public static final String NET_GDR_LEVEL = "NCCL_NET_GDR_LEVEL";
    /** {@code NCCL_BUFFSIZE}: the buffer size per channel, in bytes. */
    public static final String BUFFSIZE = "NCCL_BUFFSIZE";
    /** {@code NCCL_NTHREADS}: CUDA threads per block. */
    public static final String NTHREADS = "NCCL_NTHREADS";
    /** {@code NCCL_MIN_NCHANNELS}: the least number of channels. */
    public static final String MIN_NCHANNELS = "NCCL_MIN_NCHANNELS";
    /** {@code NCCL_MAX_NCHANNELS}: the greatest number of channels. */
    public static final String MAX_NCHANNELS = "NCCL_MAX_NCHANNELS";
    /** {@code NCCL_COMM_ID}: {@code host:port} of the bootstrap root, letting every rank derive the unique id. */
    public static final String COMM_ID = "NCCL_COMM_ID";

    /**
     * Names accepted by {@link Builder#set} although they lack the {@code NCCL_} prefix: variables read at
     * initialization by the CUDA runtime that NCCL runs on, and commonly set beside NCCL's own. Like NCCL's,
     * they take effect only when set before CUDA initializes.
     */
    public static final Set<String> NON_NCCL_NAMES = Collections.unmodifiableSet(new TreeSet<>(List.of(
            "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING")));

    /** The system-property prefix that maps to {@code NCCL_} variables. */
    public static final String PROPERTY_PREFIX = "nccl.";

    /** Reports whether NCCL has initialized in this process (tests substitute their own). */
    private static volatile BooleanSupplier ncclInitialized = NcclEnvironment::isNcclInitialized;

    /** Algorithms named in {@code NCCL_ALGO}. */
    public enum Algorithm {
        /** Tree. */
        TREE("Tree"),
        /** Ring. */
        RING("Ring"),
        /** CollNet direct (needs a CollNet/SHARP network). */
        COLLNET_DIRECT("CollnetDirect"),
        /** CollNet chain (needs a CollNet/SHARP network). */
        COLLNET_CHAIN("CollnetChain"),
        /** NVLink SHARP. */
        NVLS("NVLS"),
        /** NVLink SHARP with a tree across nodes. */
        NVLS_TREE("NVLSTree"),
        /** Parallel aggregated trees. */
        PAT("PAT");

        private final String ncclName;

        Algorithm(String ncclName) {
            this.ncclName = ncclName;
        }

        /**
         * The name NCCL uses for this algorithm in {@code NCCL_ALGO}.
         *
         * @return the name, e.g. {@code "Ring"} or {@code "NVLSTree"}
         */
        public String ncclName() {
            return ncclName;
        }
    }

    /** Protocols named in {@code NCCL_PROTO}. */
    public enum Protocol {
        /** Low latency (8-byte stores with flags). */
        LL("LL"),
        /** Low latency on 128-byte lines. */
        LL128("LL128"),
        /** Simple (bulk copies with fences). */
        SIMPLE("Simple");

        private final String ncclName;

        Protocol(String ncclName) {
            this.ncclName = ncclName;
        }

        /**
         * The name NCCL uses for this protocol in {@code NCCL_PROTO}.
         *
         * @return the name, e.g. {@code "LL128"} or {@code "Simple"}
         */
        public String ncclName() {
            return ncclName;
        }
    }

    /** Levels of {@code NCCL_DEBUG}, least verbose first. */
    public enum DebugLevel {
        /** Prints the version only. */
        VERSION,
        /** Prints warnings and errors. */
        WARN,
        /** Prints information on what NCCL does. */
        INFO,
        /**
         * A level NCCL accepts between INFO and TRACE (its {@code NCCL_LOG_ABORT}); NCCL documents no behaviour of
         * its own for it (checked in NCCL 2.19 to 2.30's sources), so it logs as INFO does.
         */
        ABORT,
        /** Prints replayable traces of every call (when NCCL was built with tracing). */
        TRACE
    }

    /** Subsystems named in {@code NCCL_DEBUG_SUBSYS}. */
    public enum DebugSubsystem {
        /** Initialization. */ INIT,
        /** Collectives. */ COLL,
        /** Peer-to-peer transport. */ P2P,
        /** Shared-memory transport. */ SHM,
        /** Network transport. */ NET,
        /** Topology and graph search. */ GRAPH,
        /** Algorithm and protocol tuning. */ TUNING,
        /** Settings read from the environment. */ ENV,
        /** Device memory allocation. */ ALLOC,
        /** Host memory allocation (recent NCCL). */ ALLOC_HOST,
        /** API calls. */ CALL,
        /** Proxy thread. */ PROXY,
        /** NVLink SHARP. */ NVLS,
        /** Bootstrap network. */ BOOTSTRAP,
        /** Buffer registration. */ REG,
        /** Profiling. */ PROFILE,
        /** Reliability, availability, serviceability. */ RAS,
        /** Communicator destruction and plugin unloading (recent NCCL). */ DESTROY,
        /** Every subsystem. */ ALL
    }

    /** Topology distances used by {@code NCCL_P2P_LEVEL} and {@code NCCL_NET_GDR_LEVEL}, nearest first. */
    public enum TopologyLevel {
        /** Never (same GPU only). */ LOC,
        /** Connected through NVLink. */ NVL,
        /** On the same PCI switch. */ PIX,
        /** Through several PCI switches, not the CPU. */ PXB,
        /** Through the PCI host bridge of one CPU. */ PHB,
        /** Across CPUs (SMP interconnect such as QPI/UPI). */ SYS
    }

    /** Collective names that may prefix an {@code NCCL_ALGO}/{@code NCCL_PROTO} list (NCCL 2.24 and later). */
    static final List<String> COLLECTIVES = List.of("broadcast", "reduce", "allgather", "reducescatter", "allreduce");

    private static final Pattern NAME = Pattern.compile("[A-Z][A-Z0-9_]*");
    private static final Pattern PROPERTY_WORDS = Pattern.compile("[a-z0-9]+([._][a-z0-9]+)*");
    private static final Pattern UNSIGNED = Pattern.compile("[0-9]{1,18}");
    /**
     * One entry of an interface or HCA list: a name prefix, optionally {@code :port}, then optionally more
     * {@code :}-separated numbers, which NCCL reads past (2.28's list parser keeps the port and skips to the next
     * comma; newer HCA lists put a rail and a plane there).
     */
    private static final Pattern IFACE_ELEMENT = Pattern.compile("([^\\s,:^=]+)(:([0-9]{1,5})(:[0-9]{0,9}){0,2})?");
    private static final Pattern HOST_LABEL = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?");

    /** Validators of the variables this class knows, by name; each returns the value to store. */
    private static final Map<String, Validator> KNOWN;

    static {
        Map<String, Validator> m = new LinkedHashMap<>();
        m.put(ALGO, (n, v) -> nameList(n, v, names(Algorithm.values()), "algorithm", true));
        m.put(PROTO, (n, v) -> nameList(n, v, names(Protocol.values()), "protocol", true));
        m.put(DEBUG, (n, v) -> oneOf(n, v, enumNames(DebugLevel.values()), "debug level"));
        m.put(DEBUG_SUBSYS, (n, v) -> nameList(n, v, enumNames(DebugSubsystem.values()), "subsystem", false));
        m.put(DEBUG_FILE, NcclEnvironment::debugFile);
        m.put(SOCKET_IFNAME, NcclEnvironment::interfaceList);
        m.put(IB_HCA, NcclEnvironment::interfaceList);
        m.put(IB_DISABLE, NcclEnvironment::bool);
        m.put(P2P_DISABLE, NcclEnvironment::bool);
        m.put(P2P_LEVEL, NcclEnvironment::level);
        m.put(SHM_DISABLE, NcclEnvironment::bool);
        m.put(NET_GDR_LEVEL, NcclEnvironment::level);
        m.put(BUFFSIZE, (n, v) -> Long.toString(positive(n, v, Long.MAX_VALUE)));
        m.put(NTHREADS, NcclEnvironment::nthreads);
        m.put(MIN_NCHANNELS, (n, v) -> Long.toString(positive(n, v, Integer.MAX_VALUE)));
        m.put(MAX_NCHANNELS, (n, v) -> Long.toString(positive(n, v, Integer.MAX_VALUE)));
        m.put(COMM_ID, (n, v) -> {
            parseHostPort(n, v);
            return v;
        });
        KNOWN = Collections.unmodifiableMap(m);
    }

    private final Map<String, String> settings;

    private NcclEnvironment(Map<String, String> settings) {
        this.settings = Collections.unmodifiableMap(new TreeMap<>(settings));
    }

    /**
     * A builder with nothing set.
     *
     * @return a new, empty builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * An environment with nothing set; {@link #apply()} on it does nothing.
     *
     * @return the empty environment
     */
    public static NcclEnvironment empty() {
        return new NcclEnvironment(Map.of());
    }

    /**
     * The settings given as {@code nccl.*} system properties of this JVM, e.g. {@code -Dnccl.algo=Ring}.
     *
     * @return an environment holding one variable per {@code nccl.*} property (empty when there is none)
     * @throws IllegalArgumentException naming the property when a name or value is invalid
     */
    public static NcclEnvironment fromSystemProperties() {
        return builder().systemProperties(System.getProperties()).build();
    }

    /**
     * The names of the variables with a typed setter in {@link Builder}, in a fixed order.
     *
     * @return the unmodifiable set of names, such as {@value #ALGO}, in the order of the constants above
     */
    public static Set<String> knownVariables() {
        return KNOWN.keySet();
    }

    /**
     * The variable that system property {@code property} maps to: {@code nccl.} plus lower-case words separated by
     * dots or underscores becomes {@code NCCL_} plus the words in upper case separated by underscores.
     *
     * @param property a property name such as {@code nccl.debug.subsys}
     * @return the variable, such as {@code NCCL_DEBUG_SUBSYS}
     * @throws IllegalArgumentException when the name does not follow that rule
     */
    public static String variableForProperty(String property) {
        Objects.requireNonNull(property, "property");
        if (!property.startsWith(PROPERTY_PREFIX)) {
            throw new IllegalArgumentException("system property \"" + property + "\" does not start with \""
                    + PROPERTY_PREFIX + "\"; NCCL settings are given as e.g. -Dnccl.algo=Ring");
        }
        String words = property.substring(PROPERTY_PREFIX.length());
        if (!PROPERTY_WORDS.matcher(words).matches()) {
            throw new IllegalArgumentException("system property \"" + property + "\" is not a valid NCCL setting"
                    + " name: after \"nccl.\" use lower-case letters and digits in words separated by '.' or '_',"
                    + " e.g. nccl.debug.subsys for NCCL_DEBUG_SUBSYS");
        }
        return "NCCL_" + words.replace('.', '_').toUpperCase(Locale.ROOT);
    }

    /**
     * The configured variables.
     *
     * @return variable name to value, sorted by name; unmodifiable
     */
    public Map<String, String> settings() {
        return settings;
    }

    /**
     * The configured value of one variable.
     *
     * @param name the variable name, e.g. {@value #ALGO}
     * @return the value as stored (validation normalizes some: {@code NCCL_DEBUG} and topology levels to upper case,
     *         numbers without leading zeros), or empty when this environment does not set {@code name}
     */
    public Optional<String> get(String name) {
        return Optional.ofNullable(settings.get(name));
    }

    /**
     * A builder holding these settings, to derive a changed environment.
     *
     * @return a new builder with a copy of these settings; changing it leaves this environment as it is
     */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.values.putAll(settings);
        return b;
    }

    /**
     * Writes every setting into this process's environment with {@code setenv}, replacing values already there.
     * Call it before the first NCCL call: NCCL reads its variables once, when it initializes. When NCCL has already
     * initialized, the variables are written anyway and a warning is logged for each one that changed.
     *
     * @return the names of the variables whose value changed, in name order
     * @throws IllegalStateException when the environment cannot be written (nccl4j's native library did not load)
     */
    public List<String> apply() {
        return apply(ProcessEnvironment.live(), ncclInitialized);
    }

    List<String> apply(ProcessEnvironment env, BooleanSupplier initialized) {
        boolean late = initialized.getAsBoolean();
        List<String> changed = new ArrayList<>();
        for (Map.Entry<String, String> e : settings.entrySet()) {
            String name = e.getKey();
            String before = env.get(name);
            if (e.getValue().equals(before)) {
                continue;
            }
            env.set(name, e.getValue());
            changed.add(name);
            String was = before == null ? "unset" : "\"" + before + "\"";
            if (late) {
                LOG.warn("{} set to \"{}\" (was {}) after NCCL was initialized: NCCL reads {} only when it initializes,"
                        + " so this has no effect on the NCCL already running in this process; apply the environment"
                        + " before the first NCCL call", name, e.getValue(), was, name);
            } else {
                LOG.debug("{} set to \"{}\" (was {})", name, e.getValue(), was);
            }
        }
        return Collections.unmodifiableList(changed);
    }

    /**
     * The values in the live process environment of every variable with a typed setter plus every variable set in
     * this environment, leaving out those that are not set; sorted by name.
     *
     * @return variable name to live value; unmodifiable
     * @throws IllegalStateException when the live environment cannot be read (nccl4j's native library did not load)
     */
    public Map<String, String> effective() {
        return effective(ProcessEnvironment.live());
    }

    Map<String, String> effective(ProcessEnvironment env) {
        Map<String, String> out = new TreeMap<>();
        for (String name : watched()) {
            String v = env.get(name);
            if (v != null) {
                out.put(name, v);
            }
        }
        return Collections.unmodifiableMap(out);
    }

    /**
     * A human-readable table of the watched variables: the live value of each, the configured one, and whether they
     * differ (for example because {@link #apply()} was not called, or another party changed the variable).
     *
     * @return the table, one line per variable after a header line, each line ending in {@code '\n'}
     * @throws IllegalStateException when the live environment cannot be read (nccl4j's native library did not load)
     */
    public String report() {
        return report(ProcessEnvironment.live(), ncclInitialized);
    }

    String report(ProcessEnvironment env, BooleanSupplier initialized) {
        Set<String> names = watched();
        int width = names.stream().mapToInt(String::length).max().orElse(0);
        StringBuilder sb = new StringBuilder();
        sb.append("NCCL environment: ").append(settings.size()).append(" configured, NCCL ")
                .append(initialized.getAsBoolean() ? "already initialized (changes now have no effect)"
                        : "not yet initialized").append('\n');
        for (String name : names) {
            String live = env.get(name);
            String want = settings.get(name);
            sb.append("  ").append(name).append(" ".repeat(width - name.length())).append(" = ")
                    .append(live == null ? "(unset)" : live);
            if (want == null) {
                sb.append(live == null ? "" : "   [from the process environment]");
            } else if (want.equals(live)) {
                sb.append("   [configured]");
            } else {
                sb.append("   [configured \"").append(want).append("\", not in effect: call apply()]");
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    private Set<String> watched() {
        Set<String> names = new TreeSet<>(KNOWN.keySet());
        names.addAll(settings.keySet());
        return names;
    }

    /** The configured settings as {@code NAME=value} pairs separated by spaces. */
    @Override
    public String toString() {
        return settings.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(" ", "NcclEnvironment[", "]"));
    }

    /** Equal when the settings are equal. */
    @Override
    public boolean equals(Object o) {
        return o instanceof NcclEnvironment && ((NcclEnvironment) o).settings.equals(settings);
    }

    /** Hash of the settings. */
    @Override
    public int hashCode() {
        return settings.hashCode();
    }

    /**
     * Whether NCCL has initialized in this process, and so has read its environment: a call of
     * {@code ncclGetUniqueId} or of an {@code ncclCommInit*} function has reached the loaded library (as
     * {@link NcclNative#ncclInitialized()} tells). Settings applied afterwards have no effect on that NCCL.
     *
     * @return true once NCCL has initialized; false before, and when nccl4j's native library did not load (nothing
     *         can have initialized NCCL through it then)
     */
    public static boolean isNcclInitialized() {
        try {
            return NcclNative.ncclInitialized() == 1;
        } catch (LinkageError e) {
            return false;
        }
    }

    /** Package-private hook: how {@link #apply()} learns whether NCCL has initialized in this process. */
    static void ncclInitializedHook(BooleanSupplier hook) {
        ncclInitialized = Objects.requireNonNull(hook, "hook");
    }

    /** The current hook (tests restore it). */
    static BooleanSupplier ncclInitializedHook() {
        return ncclInitialized;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Builder

    /**
     * Collects settings; each setter validates its value at once and throws {@link IllegalArgumentException} naming
     * the variable, the value and what is accepted. A later setting of the same variable replaces an earlier one.
     * Not thread-safe.
     */
    public static final class Builder {
        private final Map<String, String> values = new TreeMap<>();

        private Builder() {
        }

        /**
         * Sets {@code NCCL_ALGO} from NCCL's own syntax: a comma-separated list of algorithms (case-insensitive),
         * {@code ^} in front to exclude them instead, and per collective as {@code allreduce:tree,ring;broadcast:ring}
         * (NCCL 2.24+). Only the first entry may lack a collective prefix.
         *
         * @param spec the value, e.g. {@code Ring,Tree}, {@code ^NVLS} or {@code allreduce:tree;broadcast:ring}
         * @return this builder
         * @throws IllegalArgumentException when an algorithm or collective name is unknown or the syntax is wrong
         */
        public Builder algo(String spec) {
            return set(ALGO, spec);
        }

        /**
         * Sets {@code NCCL_ALGO} to allow exactly these algorithms.
         *
         * @param algorithms the algorithms, at least one
         * @return this builder
         * @throws IllegalArgumentException when no algorithm is given
         */
        public Builder algo(Algorithm... algorithms) {
            return set(ALGO, join(nonEmpty(ALGO, algorithms), Algorithm::ncclName));
        }

        /**
         * Sets {@code NCCL_ALGO} to allow every algorithm except these ({@code ^} syntax).
         *
         * @param algorithms the algorithms to exclude, at least one
         * @return this builder
         * @throws IllegalArgumentException when no algorithm is given
         */
        public Builder algoExcluding(Algorithm... algorithms) {
            return set(ALGO, "^" + join(nonEmpty(ALGO, algorithms), Algorithm::ncclName));
        }

        /**
         * Sets {@code NCCL_PROTO} from NCCL's syntax, as for {@link #algo(String)}: e.g. {@code ^LL128}.
         *
         * @param spec the value: protocol names ({@code LL}, {@code LL128}, {@code Simple}; case-insensitive),
         *         optionally negated with {@code ^} and per collective
         * @return this builder
         * @throws IllegalArgumentException when a protocol or collective name is unknown or the syntax is wrong
         */
        public Builder protocol(String spec) {
            return set(PROTO, spec);
        }

        /**
         * Sets {@code NCCL_PROTO} to allow exactly these protocols.
         *
         * @param protocols the protocols, at least one
         * @return this builder
         * @throws IllegalArgumentException when no protocol is given
         */
        public Builder protocol(Protocol... protocols) {
            return set(PROTO, join(nonEmpty(PROTO, protocols), Protocol::ncclName));
        }

        /**
         * Sets {@code NCCL_PROTO} to allow every protocol except these ({@code ^} syntax).
         *
         * @param protocols the protocols to exclude, at least one
         * @return this builder
         * @throws IllegalArgumentException when no protocol is given
         */
        public Builder protocolExcluding(Protocol... protocols) {
            return set(PROTO, "^" + join(nonEmpty(PROTO, protocols), Protocol::ncclName));
        }

        /**
         * Sets {@code NCCL_DEBUG}.
         *
         * @param level the log level
         * @return this builder
         */
        public Builder debug(DebugLevel level) {
            return set(DEBUG, Objects.requireNonNull(level, "level").name());
        }

        /**
         * Sets {@code NCCL_DEBUG_SUBSYS} from NCCL's syntax: a comma-separated list, {@code ^} in front to negate.
         *
         * @param spec the value, e.g. {@code INIT,NET} or {@code ^PROXY}; names as in {@link DebugSubsystem},
         *         case-insensitive
         * @return this builder
         * @throws IllegalArgumentException when a subsystem is unknown or the syntax is wrong
         */
        public Builder debugSubsys(String spec) {
            return set(DEBUG_SUBSYS, spec);
        }

        /**
         * Sets {@code NCCL_DEBUG_SUBSYS} to these subsystems.
         *
         * @param subsystems the subsystems that log, at least one
         * @return this builder
         * @throws IllegalArgumentException when no subsystem is given
         */
        public Builder debugSubsys(DebugSubsystem... subsystems) {
            return set(DEBUG_SUBSYS, join(nonEmpty(DEBUG_SUBSYS, subsystems), DebugSubsystem::name));
        }

        /**
         * Sets {@code NCCL_DEBUG_SUBSYS} to every subsystem except these ({@code ^} syntax).
         *
         * @param subsystems the subsystems that do not log, at least one
         * @return this builder
         * @throws IllegalArgumentException when no subsystem is given
         */
        public Builder debugSubsysExcluding(DebugSubsystem... subsystems) {
            return set(DEBUG_SUBSYS, "^" + join(nonEmpty(DEBUG_SUBSYS, subsystems), DebugSubsystem::name));
        }

        /**
         * Sets {@code NCCL_DEBUG_FILE}: a file name in which NCCL replaces {@code %h} with the host name and
         * {@code %p} with the process id. NCCL does not expand {@code ~}, so a leading {@code ~} is rejected.
         *
         * @param pattern the file name, absolute or relative to NCCL's working directory, e.g.
         *         {@code /tmp/nccl.%h.%p.log}
         * @return this builder
         * @throws IllegalArgumentException when {@code pattern} is empty or starts with {@code ~}
         */
        public Builder debugFile(String pattern) {
            return set(DEBUG_FILE, pattern);
        }

        /**
         * Sets {@code NCCL_SOCKET_IFNAME}: comma-separated interface name prefixes, {@code ^} in front to exclude,
         * then {@code =} to match whole names instead of prefixes; e.g. {@code ^docker,lo} or {@code =eth0}.
         *
         * @param spec the value
         * @return this builder
         * @throws IllegalArgumentException when the list is empty or an entry is malformed
         */
        public Builder socketIfname(String spec) {
            return set(SOCKET_IFNAME, spec);
        }

        /**
         * Sets {@code NCCL_IB_HCA}: comma-separated adapter name prefixes with an optional {@code :port}, with the
         * same {@code ^} and {@code =} prefixes as {@link #socketIfname}; e.g. {@code =mlx5_0:1,mlx5_1:1}.
         *
         * @param spec the value
         * @return this builder
         * @throws IllegalArgumentException when the list is empty, an entry is malformed or a port is 0
         */
        public Builder ibHca(String spec) {
            return set(IB_HCA, spec);
        }

        /**
         * Sets {@code NCCL_IB_DISABLE} (true turns InfiniBand/RoCE off, so NCCL uses sockets).
         *
         * @param disable true to write {@code 1}, false to write {@code 0}
         * @return this builder
         */
        public Builder ibDisable(boolean disable) {
            return set(IB_DISABLE, disable ? "1" : "0");
        }

        /**
         * Sets {@code NCCL_P2P_DISABLE} (true turns direct GPU-to-GPU transport off).
         *
         * @param disable true to write {@code 1}, false to write {@code 0}
         * @return this builder
         */
        public Builder p2pDisable(boolean disable) {
            return set(P2P_DISABLE, disable ? "1" : "0");
        }

        /**
         * Sets {@code NCCL_P2P_LEVEL} to a topology distance.
         *
         * @param level the farthest distance at which GPUs still use P2P
         * @return this builder
         */
        public Builder p2pLevel(TopologyLevel level) {
            return set(P2P_LEVEL, Objects.requireNonNull(level, "level").name());
        }

        /**
         * Sets {@code NCCL_P2P_LEVEL} to NCCL's legacy integer form.
         *
         * @param level the distance as an integer, 0 or more
         * @return this builder
         * @throws IllegalArgumentException when {@code level} is negative
         */
        public Builder p2pLevel(int level) {
            return set(P2P_LEVEL, Integer.toString(level));
        }

        /**
         * Sets {@code NCCL_SHM_DISABLE} (true turns the shared-memory transport off).
         *
         * @param disable true to write {@code 1}, false to write {@code 0}
         * @return this builder
         */
        public Builder shmDisable(boolean disable) {
            return set(SHM_DISABLE, disable ? "1" : "0");
        }

        /**
         * Sets {@code NCCL_NET_GDR_LEVEL} to a topology distance.
         *
         * @param level the farthest NIC-to-GPU distance at which GPUDirect RDMA is used
         * @return this builder
         */
        public Builder netGdrLevel(TopologyLevel level) {
            return set(NET_GDR_LEVEL, Objects.requireNonNull(level, "level").name());
        }

        /**
         * Sets {@code NCCL_NET_GDR_LEVEL} to NCCL's legacy integer form.
         *
         * @param level the distance as an integer, 0 or more
         * @return this builder
         * @throws IllegalArgumentException when {@code level} is negative
         */
        public Builder netGdrLevel(int level) {
            return set(NET_GDR_LEVEL, Integer.toString(level));
        }

        /**
         * Sets {@code NCCL_BUFFSIZE}, the buffer size per channel (NCCL's default is 4 MiB).
         *
         * @param bytes the size in bytes, 1 or more (NCCL recommends a power of 2)
         * @return this builder
         * @throws IllegalArgumentException when {@code bytes} is less than 1
         */
        public Builder buffSize(long bytes) {
            return set(BUFFSIZE, Long.toString(bytes));
        }

        /**
         * Sets {@code NCCL_NTHREADS}, the CUDA threads per block that NCCL launches.
         *
         * @param threads 64, 128, 256 or 512
         * @return this builder
         * @throws IllegalArgumentException for any other value
         */
        public Builder nThreads(int threads) {
            return set(NTHREADS, Integer.toString(threads));
        }

        /**
         * Sets {@code NCCL_MIN_NCHANNELS}; {@link #build()} checks that it is not above {@code NCCL_MAX_NCHANNELS}.
         *
         * @param channels the least number of channels, 1 or more
         * @return this builder
         * @throws IllegalArgumentException when {@code channels} is less than 1
         */
        public Builder minNChannels(int channels) {
            return set(MIN_NCHANNELS, Integer.toString(channels));
        }

        /**
         * Sets {@code NCCL_MAX_NCHANNELS}; {@link #build()} checks that it is not below {@code NCCL_MIN_NCHANNELS}.
         *
         * @param channels the greatest number of channels, 1 or more
         * @return this builder
         * @throws IllegalArgumentException when {@code channels} is less than 1
         */
        public Builder maxNChannels(int channels) {
            return set(MAX_NCHANNELS, Integer.toString(channels));
        }

        /**
         * Sets {@code NCCL_COMM_ID} to {@code host:port}: an IPv4 address, an IPv6 address in brackets or a host
         * name, and a port from 1 to 65535; e.g. {@code 10.0.0.1:29500} or {@code [fd00::1]:29500}.
         *
         * @param hostPort the bootstrap root's address and port
         * @return this builder
         * @throws IllegalArgumentException when the host or the port is invalid
         */
        public Builder commId(String hostPort) {
            return set(COMM_ID, hostPort);
        }

        /**
         * Sets {@code NCCL_COMM_ID} from a host and a port, putting an IPv6 address in brackets.
         *
         * @param host an IPv4 address, an IPv6 address (with or without brackets) or a host name
         * @param port the port, 1 to 65535
         * @return this builder
         * @throws IllegalArgumentException when the host or the port is invalid
         */
        public Builder commId(String host, int port) {
            Objects.requireNonNull(host, "host");
            String bracketed = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
            return set(COMM_ID, bracketed + ":" + port);
        }

        /**
         * Sets any variable. The name must start with {@code NCCL_} and consist of upper-case letters, digits and
         * underscores, or be one of {@link #NON_NCCL_NAMES}. Values of the variables with a typed setter are
         * validated as there; others must be non-empty and free of NUL characters.
         *
         * @param name the variable name, e.g. {@code NCCL_IB_TIMEOUT}
         * @param value the value; for variables with a typed setter some values are stored normalized (e.g.
         *         {@code NCCL_DEBUG=warn} as {@code WARN}, {@code NCCL_BUFFSIZE=0042} as {@code 42})
         * @return this builder
         * @throws IllegalArgumentException when the name is not accepted, or the value is empty, holds a NUL or fails
         *         the variable's validation
         */
        public Builder set(String name, String value) {
            checkName(name);
            Objects.requireNonNull(value, () -> "value of " + name);
            if (value.isEmpty()) {
                throw new IllegalArgumentException(name + " is empty: give a value, or leave " + name
                        + " out of the environment to keep NCCL's default");
            }
            if (value.indexOf('\0') >= 0) {
                throw new IllegalArgumentException(name + " contains a NUL character, which the environment"
                        + " cannot hold: remove it");
            }
            Validator v = KNOWN.get(name);
            values.put(name, v == null ? value : v.validate(name, value));
            return this;
        }

        /**
         * Removes {@code name} from this builder (it does not unset it in the process environment).
         *
         * @param name the variable name; one that is not set is ignored
         * @return this builder
         */
        public Builder remove(String name) {
            values.remove(name);
            return this;
        }

        /**
         * Adds every {@code nccl.*} entry of {@code properties} (see {@link NcclEnvironment#variableForProperty}),
         * replacing settings made earlier; other properties are ignored.
         *
         * @param properties the properties, e.g. {@link System#getProperties()}
         * @return this builder
         * @throws IllegalArgumentException naming the property when its name or value is invalid
         */
        public Builder systemProperties(Properties properties) {
            Objects.requireNonNull(properties, "properties");
            for (String key : new TreeSet<>(properties.stringPropertyNames())) {
                if (!key.startsWith(PROPERTY_PREFIX)) {
                    continue;
                }
                String name = variableForProperty(key);
                try {
                    set(name, properties.getProperty(key));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("system property " + key + " (" + name + "): "
                            + e.getMessage(), e);
                }
            }
            return this;
        }

        /**
         * Checks the settings together and returns the immutable environment.
         *
         * @return the environment; later changes to this builder do not affect it
         * @throws IllegalArgumentException when {@code NCCL_MIN_NCHANNELS} is greater than {@code NCCL_MAX_NCHANNELS}
         */
        public NcclEnvironment build() {
            String min = values.get(MIN_NCHANNELS);
            String max = values.get(MAX_NCHANNELS);
            if (min != null && max != null && Long.parseLong(min) > Long.parseLong(max)) {
                throw new IllegalArgumentException(MIN_NCHANNELS + "=" + min + " is greater than " + MAX_NCHANNELS
                        + "=" + max + ": lower the minimum or raise the maximum");
            }
            return new NcclEnvironment(values);
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Validation

    @FunctionalInterface
    private interface Validator {
        String validate(String name, String value);
    }

    static void checkName(String name) {
        Objects.requireNonNull(name, "name");
        if (NON_NCCL_NAMES.contains(name)) {
            return;
        }
        if (!NAME.matcher(name).matches() || !name.startsWith("NCCL_") || name.length() == "NCCL_".length()) {
            throw new IllegalArgumentException("\"" + name + "\" is not an NCCL variable name: names start with NCCL_"
                    + " and use upper-case letters, digits and underscores (e.g. NCCL_ALGO); the only other names"
                    + " accepted are " + NON_NCCL_NAMES);
        }
    }

    private static <T> T[] nonEmpty(String name, T[] items) {
        Objects.requireNonNull(items, name);
        if (items.length == 0) {
            throw new IllegalArgumentException(name + " needs at least one entry: pass one or more, or do not set "
                    + name);
        }
        for (T t : items) {
            Objects.requireNonNull(t, () -> "an entry of " + name);
        }
        return items;
    }

    private static <T> String join(T[] items, java.util.function.Function<T, String> f) {
        return Arrays.stream(items).map(f).collect(Collectors.joining(","));
    }

    private static List<String> names(Algorithm[] a) {
        return Arrays.stream(a).map(Algorithm::ncclName).collect(Collectors.toList());
    }

    private static List<String> names(Protocol[] p) {
        return Arrays.stream(p).map(Protocol::ncclName).collect(Collectors.toList());
    }

    private static List<String> enumNames(Enum<?>[] values) {
        return Arrays.stream(values).map(Enum::name).collect(Collectors.toList());
    }

    private static String syntaxHelp(String name, boolean perCollective) {
        String s = "; syntax: a comma-separated list, with '^' in front to exclude the listed ones";
        if (perCollective) {
            s += ", optionally per collective as 'allreduce:tree,ring;broadcast:ring' (collectives: "
                    + String.join(", ", COLLECTIVES) + "; only the first entry may lack a collective)";
        }
        return s;
    }

    /**
     * A list of names from {@code allowed} (case-insensitive), '^' negation, and for ALGO/PROTO collective prefixes.
     */
    private static String nameList(String name, String value, List<String> allowed, String what,
            boolean perCollective) {
        String[] entries = value.split(";", -1);
        if (!perCollective && entries.length > 1) {
            throw new IllegalArgumentException(name + "=\"" + value + "\": ';' is not allowed here"
                    + syntaxHelp(name, false) + "; valid " + what + "s: " + String.join(", ", allowed));
        }
        for (int i = 0; i < entries.length; i++) {
            String entry = entries[i];
            String list = entry;
            int colon = entry.indexOf(':');
            if (perCollective && colon >= 0) {
                String coll = entry.substring(0, colon);
                list = entry.substring(colon + 1);
                if (!COLLECTIVES.contains(coll.toLowerCase(Locale.ROOT))) {
                    throw new IllegalArgumentException(name + "=\"" + value + "\": unknown collective \"" + coll
                            + "\"; valid collectives (case-insensitive): " + String.join(", ", COLLECTIVES)
                            + syntaxHelp(name, true));
                }
                if (list.indexOf(':') >= 0) {
                    throw new IllegalArgumentException(name + "=\"" + value + "\": entry \"" + entry
                            + "\" has more than one ':'" + syntaxHelp(name, true));
                }
            } else if (perCollective && i > 0) {
                throw new IllegalArgumentException(name + "=\"" + value + "\": entry \"" + entry
                        + "\" lacks a collective; only the first entry may" + syntaxHelp(name, true));
            }
            if (list.startsWith("^")) {
                list = list.substring(1);
            }
            if (list.isEmpty()) {
                throw new IllegalArgumentException(name + "=\"" + value + "\": empty list" + (entries.length > 1
                        ? " in entry \"" + entry + "\"" : "") + "; valid " + what + "s (case-insensitive): "
                        + String.join(", ", allowed) + syntaxHelp(name, perCollective));
            }
            for (String item : list.split(",", -1)) {
                if (allowed.stream().noneMatch(a -> a.equalsIgnoreCase(item))) {
                    throw new IllegalArgumentException(name + "=\"" + value + "\": " + (item.isEmpty()
                            ? "empty " + what + " name" : "unknown " + what + " \"" + item + "\"")
                            + "; valid " + what + "s (case-insensitive): " + String.join(", ", allowed)
                            + syntaxHelp(name, perCollective));
                }
            }
        }
        return value;
    }

    private static String oneOf(String name, String value, List<String> allowed, String what) {
        for (String a : allowed) {
            if (a.equalsIgnoreCase(value)) {
                return a;
            }
        }
        throw new IllegalArgumentException(name + "=\"" + value + "\": unknown " + what + "; valid " + what
                + "s (case-insensitive): " + String.join(", ", allowed));
    }

    private static String bool(String name, String value) {
        if (value.equals("0") || value.equals("1")) {
            return value;
        }
        throw new IllegalArgumentException(name + "=\"" + value + "\": expected 0 or 1 (1 disables)");
    }

    private static String level(String name, String value) {
        if (UNSIGNED.matcher(value).matches()) {
            return Long.toString(Long.parseLong(value));
        }
        for (TopologyLevel l : TopologyLevel.values()) {
            if (l.name().equalsIgnoreCase(value)) {
                return l.name();
            }
        }
        throw new IllegalArgumentException(name + "=\"" + value + "\": expected one of "
                + enumNames(TopologyLevel.values()) + " (case-insensitive) or a non-negative integer (legacy form)");
    }

    private static long positive(String name, String value, long max) {
        if (UNSIGNED.matcher(value).matches()) {
            long v = Long.parseLong(value);
            if (v >= 1 && v <= max) {
                return v;
            }
        }
        throw new IllegalArgumentException(name + "=\"" + value + "\": expected a positive integer"
                + (max < Long.MAX_VALUE ? " up to " + max : ""));
    }

    private static String nthreads(String name, String value) {
        if (value.equals("64") || value.equals("128") || value.equals("256") || value.equals("512")) {
            return value;
        }
        throw new IllegalArgumentException(name + "=\"" + value + "\": expected one of 64, 128, 256, 512");
    }

    private static String debugFile(String name, String value) {
        if (value.startsWith("~")) {
            throw new IllegalArgumentException(name + "=\"" + value + "\": NCCL does not expand '~'; give an"
                    + " absolute or relative path (e.g. /tmp/nccl.%h.%p.log)");
        }
        return value;
    }

    private static String interfaceList(String name, String value) {
        String list = value;
        if (list.startsWith("^")) {
            list = list.substring(1);
        }
        if (list.startsWith("=")) {
            list = list.substring(1);
        }
        String help = "; syntax: comma-separated name prefixes, each optionally ':port' (for an HCA then"
                + " ':rail:plane'), with '^' in front to exclude"
                + " and then '=' to match whole names (e.g. \"^docker,lo\", \"=mlx5_0:1,mlx5_1:1\")";
        if (list.isEmpty()) {
            throw new IllegalArgumentException(name + "=\"" + value + "\": no interface given" + help);
        }
        for (String item : list.split(",", -1)) {
            var m = IFACE_ELEMENT.matcher(item);
            if (!m.matches()) {
                throw new IllegalArgumentException(name + "=\"" + value + "\": invalid entry \"" + item + "\"" + help);
            }
            if (m.group(3) != null) {
                int port = Integer.parseInt(m.group(3));
                if (port < 1) {
                    throw new IllegalArgumentException(name + "=\"" + value + "\": port " + port + " in \"" + item
                            + "\" must be 1 or more" + help);
                }
            }
        }
        return value;
    }

    /**
     * Parses {@code host:port} as NCCL_COMM_ID accepts it: IPv4, {@code [IPv6]} or a host name, then a port from 1
     * to 65535.
     *
     * @param name the variable it came from, for the error message
     * @param value the text
     * @return {host, port}; the host without brackets
     * @throws IllegalArgumentException naming {@code name} when the text is not {@code host:port}
     */
    public static String[] parseHostPort(String name, String value) {
        String help = "; expected host:port with an IPv4 address, an IPv6 address in brackets or a host name, and a"
                + " port from 1 to 65535 (e.g. 10.0.0.1:29500, [fd00::1]:29500, node01:29500)";
        int colon = value.lastIndexOf(':');
        if (colon <= 0 || colon == value.length() - 1) {
            throw new IllegalArgumentException(name + "=\"" + value + "\": missing host or port" + help);
        }
        String host = value.substring(0, colon);
        String portText = value.substring(colon + 1);
        if (!portText.matches("[0-9]{1,5}") || Integer.parseInt(portText) < 1 || Integer.parseInt(portText) > 65535) {
            throw new IllegalArgumentException(name + "=\"" + value + "\": invalid port \"" + portText + "\"" + help);
        }
        if (host.startsWith("[")) {
            if (!host.endsWith("]") || !isIpv6(host.substring(1, host.length() - 1))) {
                throw new IllegalArgumentException(name + "=\"" + value + "\": invalid IPv6 address \"" + host + "\""
                        + help);
            }
            host = host.substring(1, host.length() - 1);
        } else if (host.indexOf(':') >= 0) {
            throw new IllegalArgumentException(name + "=\"" + value + "\": an IPv6 address must be in brackets, as in"
                    + " [" + host + "]:" + portText + help);
        } else if (host.matches("[0-9.]+")) {
            if (!isIpv4(host)) {
                throw new IllegalArgumentException(name + "=\"" + value + "\": invalid IPv4 address \"" + host + "\""
                        + help);
            }
        } else if (!isHostName(host)) {
            throw new IllegalArgumentException(name + "=\"" + value + "\": invalid host name \"" + host + "\"" + help);
        }
        return new String[] {host, portText};
    }

    static boolean isIpv4(String s) {
        String[] parts = s.split("\\.", -1);
        if (parts.length != 4) {
            return false;
        }
        for (String p : parts) {
            if (!p.matches("[0-9]{1,3}") || Integer.parseInt(p) > 255) {
                return false;
            }
        }
        return true;
    }

    static boolean isIpv6(String s) {
        int pct = s.indexOf('%');
        if (pct >= 0) {
            if (pct == s.length() - 1) {
                return false;
            }
            s = s.substring(0, pct);
        }
        int dbl = s.indexOf("::");
        if (dbl >= 0 && s.indexOf("::", dbl + 1) >= 0) {
            return false;
        }
        String[] groups = dbl >= 0
                ? (s.substring(0, dbl) + (s.substring(0, dbl).isEmpty() ? "" : ":") + "X"
                        + (s.substring(dbl + 2).isEmpty() ? "" : ":") + s.substring(dbl + 2)).split(":", -1)
                : s.split(":", -1);
        int count = 0;
        boolean hasGap = false;
        for (int i = 0; i < groups.length; i++) {
            String g = groups[i];
            if (g.equals("X")) {
                hasGap = true;
            } else if (i == groups.length - 1 && g.indexOf('.') >= 0) {
                if (!isIpv4(g)) {
                    return false;
                }
                count += 2;
            } else if (g.matches("[0-9A-Fa-f]{1,4}")) {
                count++;
            } else {
                return false;
            }
        }
        return hasGap ? count <= 7 : count == 8;
    }

    static boolean isHostName(String s) {
        if (s.isEmpty() || s.length() > 253) {
            return false;
        }
        String t = s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
        for (String label : t.split("\\.", -1)) {
            if (!HOST_LABEL.matcher(label).matches()) {
                return false;
            }
        }
        return true;
    }
}
