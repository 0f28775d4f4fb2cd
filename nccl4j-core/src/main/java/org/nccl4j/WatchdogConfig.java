package org.nccl4j;

import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import org.nccl4j.control.Durations;
import org.nccl4j.launch.ProcessEnvironment;
import org.nccl4j.trace.TraceConfig;

/**
 * The process-wide settings of the watchdog, the flight recorder and the collective check, from system properties
 * and environment variables (a system property wins over its variable). {@link CommConfig} overrides each per
 * communicator.
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>variable</th><th>system property</th><th>values</th><th>default</th></tr>
 *   <tr><td>{@code NCCL4J_TIMEOUT}</td><td>{@code nccl4j.timeout}</td><td>{@code 500ms}, {@code 30s}, {@code 10m},
 *       {@code 1h}, ISO-8601 ({@code PT10M})</td><td>10 min</td></tr>
 *   <tr><td>{@code NCCL4J_WATCHDOG}</td><td>{@code nccl4j.watchdog}</td><td>{@code on}/{@code off}
 *       ({@code true}/{@code false}, {@code 1}/{@code 0})</td><td>on</td></tr>
 *   <tr><td>{@code NCCL4J_ON_FAILURE}</td><td>{@code nccl4j.onFailure}</td><td>{@code throw}, {@code exit},
 *       {@code recover} ({@link FailurePolicy})</td><td>throw</td></tr>
 *   <tr><td>{@code NCCL4J_WATCHDOG_POLL}</td><td>{@code nccl4j.watchdogPoll}</td><td>as the timeout; how often the
 *       watchdog looks (process-wide only)</td><td>100 ms</td></tr>
 *   <tr><td>{@code NCCL4J_WATCHDOG_STUCK_TIMEOUT}</td><td>{@code nccl4j.watchdogStuckTimeout}</td><td>as the
 *       timeout, at least twice the poll interval; how long the watchdog's own thread may go without progress
 *       before its monitor declares it stuck (process-wide only; see {@link #defaultStuckTimeout})</td>
 *       <td>the longer of 2 min and 4 polls</td></tr>
 *   <tr><td>{@code NCCL4J_CHECK_COLLECTIVES}</td><td>{@code nccl4j.checkCollectives}</td><td>{@code 1}/{@code 0}
 *       (as on/off)</td><td>off</td></tr>
 *   <tr><td>{@code NCCL4J_INIT_TIMEOUT}</td><td>{@code nccl4j.initTimeout}</td><td>as the timeout; how long the
 *       rendezvous and the making of a communicator may take before every waiting rank gives up, naming the ranks
 *       that never arrived</td><td>5 min</td></tr>
 *   <tr><td>{@code NCCL4J_TRACE_BUFFER}</td><td></td><td>operations kept per communicator</td><td>2000</td></tr>
 *   <tr><td>{@code NCCL4J_TRACE_DIR}</td><td></td><td>where traces are written</td>
 *       <td>{@code ${java.io.tmpdir}/nccl4j-trace}</td></tr>
 * </table>
 *
 * @param enabled whether communicators are watched
 * @param timeout how long an operation may take before the watchdog declares it hung
 * @param policy what happens after a failure
 * @param poll how often the watchdog looks at each communicator
 * @param checkCollectives whether each collective first compares its arguments across ranks
 * @param trace the flight recorder's buffer size and directory
 * @param initTimeout how long the rendezvous and {@code ncclCommInitRankConfig} (and the making of a communicator by
 *        split or shrink) may take
 * @param stuckTimeout how long the watchdog's thread may make no progress before the watchdog's monitor declares it
 *        stuck, writes the flight records and applies the failure policy to every watched communicator
 */
public record WatchdogConfig(boolean enabled, Duration timeout, FailurePolicy policy, Duration poll,
        boolean checkCollectives, TraceConfig trace, Duration initTimeout, Duration stuckTimeout) {
    /** The variable of the timeout. */
    public static final String TIMEOUT = "NCCL4J_TIMEOUT";
    /** The variable that turns the watchdog off. */
    public static final String WATCHDOG = "NCCL4J_WATCHDOG";
    /** The variable of the failure policy. */
    public static final String ON_FAILURE = "NCCL4J_ON_FAILURE";
    /** The variable of the poll interval. */
    public static final String POLL = "NCCL4J_WATCHDOG_POLL";
    /** The variable of the deadline of initialization. */
    public static final String INIT_TIMEOUT = "NCCL4J_INIT_TIMEOUT";
    /** The deadline of initialization when none is set: 5 minutes, as the rendezvous's. */
    public static final Duration DEFAULT_INIT_TIMEOUT = Duration.ofMinutes(5);
    /** The variable of the collective check. */
    public static final String CHECK_COLLECTIVES = "NCCL4J_CHECK_COLLECTIVES";
    /** The timeout when none is set: 10 minutes, as PyTorch's. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(10);
    /** The poll interval when none is set. */
    public static final Duration DEFAULT_POLL = Duration.ofMillis(100);
    /** The variable of the time without progress after which the watchdog's thread is declared stuck. */
    public static final String STUCK_TIMEOUT = "NCCL4J_WATCHDOG_STUCK_TIMEOUT";
    /** The system property of the stuck timeout. */
    private static final String STUCK_TIMEOUT_PROPERTY = "nccl4j.watchdogStuckTimeout";
    /** The least stuck timeout of the default ({@link #defaultStuckTimeout}): 2 minutes. */
    public static final Duration MIN_DEFAULT_STUCK_TIMEOUT = Duration.ofMinutes(2);

    /**
     * The settings without a stuck timeout argument: the stuck timeout takes its default for {@code poll}.
     *
     * @param enabled see the record's description
     * @param timeout see the record's description
     * @param policy see the record's description
     * @param poll see the record's description
     * @param checkCollectives see the record's description
     * @param trace see the record's description
     * @param initTimeout see the record's description
     */
    public WatchdogConfig(boolean enabled, Duration timeout, FailurePolicy policy, Duration poll,
            boolean checkCollectives, TraceConfig trace, Duration initTimeout) {
        this(enabled, timeout, policy, poll, checkCollectives, trace, initTimeout,
                poll == null ? null : defaultStuckTimeout(poll));
    }

    /**
     * The stuck timeout when none is set: the longer of 2 minutes and 4 poll intervals. A healthy watchdog starts an
     * iteration every poll interval (100 ms unless set); an iteration makes only CUDA and NCCL calls that do not wait
     * for the GPU ({@code cudaEventQuery}, {@code cudaEventRecord}, {@code ncclCommGetAsyncError}), waits at most half
     * a second for the liveness channel's news, and after a failure writes a flight record and calls the failure
     * listener (which must return quickly). Two minutes are over a thousand missed iterations: far beyond a garbage
     * collector's pause, a loaded machine or a slow trace directory, so a healthy watchdog is not declared stuck;
     * and well inside the default operation timeout (10 minutes), which a stuck watchdog no longer enforces.
     * (PyTorch's heartbeat monitor, {@code TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC}, waits 8 minutes.) Four poll intervals
     * keep a long {@code NCCL4J_WATCHDOG_POLL} from counting as stuck.
     *
     * @param poll the poll interval
     * @return the default stuck timeout for that interval
     */
    public static Duration defaultStuckTimeout(Duration poll) {
        Duration four = poll.multipliedBy(4);
        return four.compareTo(MIN_DEFAULT_STUCK_TIMEOUT) > 0 ? four : MIN_DEFAULT_STUCK_TIMEOUT;
    }

    /**
     * Checks the components.
     *
     * @param enabled see the record's description
     * @param timeout see the record's description; positive
     * @param policy see the record's description; not {@link FailurePolicy#CALLBACK}, which needs a listener
     * @param poll see the record's description; positive
     * @param checkCollectives see the record's description
     * @param trace see the record's description
     * @param initTimeout see the record's description; positive
     * @param stuckTimeout see the record's description; at least twice {@code poll}
     */
    public WatchdogConfig {
        if (initTimeout == null || initTimeout.isNegative() || initTimeout.isZero()) {
            throw Errors.argument("initTimeout must be longer than zero, got " + initTimeout);
        }
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw Errors.argument("timeout must be longer than zero, got " + timeout);
        }
        if (poll == null || poll.isNegative() || poll.isZero()) {
            throw Errors.argument("poll must be longer than zero, got " + poll);
        }
        if (policy == null) {
            throw Errors.nullArgument("policy");
        }
        if (trace == null) {
            throw Errors.nullArgument("trace");
        }
        if (stuckTimeout == null || stuckTimeout.compareTo(poll.multipliedBy(2)) < 0) {
            throw Errors.argument("stuckTimeout must be at least twice the poll interval (" + Durations.format(poll)
                    + "), got " + (stuckTimeout == null ? null : Durations.format(stuckTimeout)));
        }
    }

    /**
     * The settings of this process: system properties, then environment variables, then the defaults.
     *
     * @return the settings
     * @throws IllegalArgumentException when a value is not one of its accepted forms (the message names the
     *         variable or property, the value and the forms)
     */
    public static WatchdogConfig fromEnvironment() {
        ProcessEnvironment env = ProcessEnvironment.liveOrJvmCopy();
        Map<String, String> vars = new HashMap<>();
        for (String n : new String[] {TIMEOUT, WATCHDOG, ON_FAILURE, POLL, CHECK_COLLECTIVES, INIT_TIMEOUT,
            STUCK_TIMEOUT, TraceConfig.BUFFER, TraceConfig.DIR}) {
            String v = env.get(n);
            if (v != null) {
                vars.put(n, v);
            }
        }
        return from(vars, System.getProperties());
    }

    /**
     * The settings from the given variables and properties.
     *
     * @param env environment variables
     * @param properties system properties
     * @return the settings
     * @throws IllegalArgumentException when a value is not one of its accepted forms
     */
    public static WatchdogConfig from(Map<String, String> env, Properties properties) {
        boolean enabled = value(env, properties, WATCHDOG, "nccl4j.watchdog", true, WatchdogConfig::onOff);
        Duration timeout = value(env, properties, TIMEOUT, "nccl4j.timeout", DEFAULT_TIMEOUT, null);
        FailurePolicy policy = value(env, properties, ON_FAILURE, "nccl4j.onFailure", FailurePolicy.THROW,
                WatchdogConfig::policy);
        Duration poll = value(env, properties, POLL, "nccl4j.watchdogPoll", DEFAULT_POLL, null);
        boolean check = value(env, properties, CHECK_COLLECTIVES, "nccl4j.checkCollectives", false,
                WatchdogConfig::onOff);
        Duration init = value(env, properties, INIT_TIMEOUT, "nccl4j.initTimeout", DEFAULT_INIT_TIMEOUT, null);
        if (init.isZero() || init.isNegative()) {
            throw new IllegalArgumentException(INIT_TIMEOUT + "=" + Durations.format(init) + " must be longer than"
                    + " zero: e.g. 5m, 90s");
        }
        Duration stuck = value(env, properties, STUCK_TIMEOUT, STUCK_TIMEOUT_PROPERTY, defaultStuckTimeout(poll),
                null);
        if (stuck.compareTo(poll.multipliedBy(2)) < 0) {
            String name = properties.getProperty(STUCK_TIMEOUT_PROPERTY, "").isBlank() ? STUCK_TIMEOUT
                    : STUCK_TIMEOUT_PROPERTY;
            throw new IllegalArgumentException(name + "=" + Durations.format(stuck) + " must be at least twice the "
                    + "watchdog's poll interval (" + Durations.format(poll) + "), or a healthy watchdog would count as "
                    + "stuck: e.g. 2m (the default: the longer of 2m and 4 polls)");
        }
        return new WatchdogConfig(enabled, timeout, policy, poll, check, TraceConfig.from(env), init, stuck);
    }

    /**
     * A setting read as every other here is: the system property wins over the variable, the value is parsed naming
     * the one it came from, and {@code fallback} stands when neither is set ({@code parser} null: a duration).
     */
    @SuppressWarnings("unchecked")
    static <T> T value(Map<String, String> env, Properties properties, String variable, String property,
            T fallback, Function<String[], T> parser) {
        String name = property;
        String v = properties.getProperty(property);
        if (v == null || v.isBlank()) {
            name = variable;
            v = env.get(variable);
        }
        if (v == null || v.isBlank()) {
            return fallback;
        }
        if (parser == null) {
            return (T) Durations.parse(name, v);
        }
        return parser.apply(new String[] {name, v});
    }

    private static Boolean onOff(String[] nv) {
        switch (nv[1].trim().toLowerCase(Locale.ROOT)) {
            case "on":
            case "true":
            case "1":
            case "yes":
                return true;
            case "off":
            case "false":
            case "0":
            case "no":
                return false;
            default:
                throw new IllegalArgumentException(nv[0] + "=" + nv[1] + " is not on or off: use on or off (also "
                        + "true/false, 1/0, yes/no)");
        }
    }

    private static FailurePolicy policy(String[] nv) {
        switch (nv[1].trim().toLowerCase(Locale.ROOT)) {
            case "throw":
                return FailurePolicy.THROW;
            case "exit":
                return FailurePolicy.EXIT;
            case "recover":
                return FailurePolicy.RECOVER;
            default:
                throw new IllegalArgumentException(nv[0] + "=" + nv[1] + " is not a failure policy: use throw (the "
                        + "default: waiting threads and later calls throw), exit (halt with status "
                        + FailurePolicy.EXIT_STATUS + ") or recover (throw, and keep the communicator for shrink); a "
                        + "callback is set in code with CommConfig.Builder.onFailure");
        }
    }
}
