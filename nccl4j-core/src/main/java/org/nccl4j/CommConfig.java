package org.nccl4j;

import org.nccl4j.control.Durations;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.trace.FlightRecorder;

/**
 * A communicator's configuration ({@code ncclConfig_t}): every field left unset keeps NCCL's default.
 * Immutable; build with {@link #builder()}.
 *
 * <p>nccl4j passes NCCL 2.30.7's {@code ncclConfig_t}. An older NCCL reads only the fields its own
 * {@code ncclConfig_t} has and silently ignores the rest, so a communicator is not made with a field set that
 * the loaded NCCL is older than: {@link Communicator#create(int, int, UniqueId, int, CommConfig)} and
 * {@link Communicator#split(int, int, CommConfig)} throw {@link IllegalArgumentException} naming the field, the
 * loaded version and the first release that has it (the NCCL release tags show: blocking 2.14.3;
 * cgaClusterSize, minCTAs, maxCTAs, netName 2.17.1; splitShare 2.18.1; trafficClass 2.26.2; commName,
 * collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs 2.27.3; nChannelsPerNetPeer, nvlinkCentricSched 2.28.3;
 * graphUsageMode, numRmaCtx 2.29.2; maxP2pPeers 2.30.3; graphStreamOrdering 2.30.7). Some values came later than
 * their field: CTAPolicy's {@link CtaPolicy#ZERO} 2.28.3, and EFFICIENCY and ZERO together (3, as bits) 2.29.2; the
 * NCCL releases before refuse them as invalid, and nccl4j refuses them first, naming the release.
 */
public final class CommConfig {
    /** NCCL's defaults everywhere. */
    public static final CommConfig DEFAULT = builder().build();

    /** {@code ncclConfig_t}'s names of the int fields, indexed by {@code NcclNative.CFG_*}. */
    private static final String[] NAMES = {"blocking", "cgaClusterSize", "minCTAs", "maxCTAs", "splitShare",
        "trafficClass", "collnetEnable", "CTAPolicy", "shrinkShare", "nvlsCTAs", "nChannelsPerNetPeer",
        "nvlinkCentricSched", "graphUsageMode", "numRmaCtx", "maxP2pPeers", "graphStreamOrdering"};

    /**
     * The version code of the first NCCL release whose {@code ncclConfig_t} has each int field, indexed by
     * {@code NcclNative.CFG_*} (NVIDIA/nccl's src/nccl.h.in at each release tag).
     */
    private static final int[] SINCE = {21403, 21701, 21701, 21701, 21801, 22602, 22703, 22703, 22703, 22703,
        22803, 22803, 22902, 22902, 23003, 23007};
    /** CTAPolicy 3 (EFFICIENCY | ZERO): NCCL reads the policy as bits from 2.29.2 (ctaPolicyIsValid in init.cc). */
    private static final int CTA_POLICY_BITS_SINCE = 22902;
    private static final int NET_NAME_SINCE = 21701;
    private static final int COMM_NAME_SINCE = 22703;

    static {
        if (NAMES.length != NcclNative.CFG_INTS || SINCE.length != NcclNative.CFG_INTS) {
            throw new AssertionError("CommConfig's tables do not match NcclNative.CFG_INTS");
        }
    }

    private final int[] ints;
    private final String netName;
    private final String commName;
    private final java.time.Duration timeout;
    private final Boolean watchdog;
    private final FailurePolicy policy;
    private final FailureListener listener;
    private final Integer traceBuffer;
    private final Boolean checkCollectives;
    private final Boolean fingerprint;

    /** @return whether the fingerprint of collectives is kept: null when not set (then it is) */
    Boolean fingerprint() {
        return fingerprint;
    }
    private final java.time.Duration initTimeout;

    private CommConfig(Builder b) {
        this.initTimeout = b.initTimeout;
        this.ints = b.ints.clone();
        this.netName = b.netName;
        this.commName = b.commName;
        this.timeout = b.timeout;
        this.watchdog = b.watchdog;
        this.policy = b.policy;
        this.listener = b.listener;
        this.traceBuffer = b.traceBuffer;
        this.checkCollectives = b.checkCollectives;
        this.fingerprint = b.fingerprint;
    }

    /**
     * The watchdog's settings for a communicator made with {@code config} (null: none): each field that the config
     * sets replaces the process-wide value of {@code base}.
     */
    static WatchSettings watchdogSettings(CommConfig config, WatchdogConfig base) {
        if (config == null) {
            return new WatchSettings(base.enabled(), base.timeout(), base.policy(), null, base.trace().bufferSize(),
                    base.trace().directory(), base.checkCollectives(), null);
        }
        return new WatchSettings(config.watchdog != null ? config.watchdog : base.enabled(),
                config.timeout != null ? config.timeout : base.timeout(),
                config.policy != null ? config.policy : base.policy(), config.listener,
                config.traceBuffer != null ? config.traceBuffer : base.trace().bufferSize(), base.trace().directory(),
                config.checkCollectives != null ? config.checkCollectives : base.checkCollectives(), config.commName);
    }

    /**
     * The deadline of initialization this config sets, or the process's ({@code NCCL4J_INIT_TIMEOUT}).
     *
     * @param config a config, or null
     * @return how long making a communicator with {@code config} may take
     */
    static java.time.Duration initTimeout(CommConfig config) {
        return config != null && config.initTimeout != null ? config.initTimeout
                : WatchdogConfig.fromEnvironment().initTimeout();
    }

    /** @return a builder with every field unset */
    public static Builder builder() {
        return new Builder();
    }

    int[] ints() {
        return ints;
    }

    String netName() {
        return netName;
    }

    String commName() {
        return commName;
    }

    /**
     * Refuses a field that {@code library} would silently ignore: one that is set here but newer than the
     * library's {@code ncclConfig_t}.
     *
     * @param library the loaded NCCL
     * @throws IllegalArgumentException naming the first such field, the loaded version and the version that
     *         added the field
     */
    void requireSupportedBy(NcclLibrary library) {
        int version = library.versionCode();
        for (int i = 0; i < ints.length; i++) {
            if (ints[i] != NcclNative.CONFIG_UNDEF_INT && version < SINCE[i]) {
                throw unsupported(NAMES[i], SINCE[i], library);
            }
        }
        int cta = ints[NcclNative.CFG_CTA_POLICY];   // set and older than its field: refused above
        if (cta == (CtaPolicy.EFFICIENCY.value() | CtaPolicy.ZERO.value()) && version < CTA_POLICY_BITS_SINCE) {
            throw unsupportedValue("CTAPolicy " + cta + " (EFFICIENCY | ZERO)", CTA_POLICY_BITS_SINCE, library);
        }
        if (cta == CtaPolicy.ZERO.value() && version < CtaPolicy.ZERO.sinceCode()) {
            throw unsupportedValue("CTAPolicy ZERO (NCCL_CTA_POLICY_ZERO, 2)", CtaPolicy.ZERO.sinceCode(), library);
        }
        if (netName != null && version < NET_NAME_SINCE) {
            throw unsupported("netName", NET_NAME_SINCE, library);
        }
        if (commName != null && version < COMM_NAME_SINCE) {
            throw unsupported("commName", COMM_NAME_SINCE, library);
        }
    }

    private static IllegalArgumentException unsupported(String field, int since, NcclLibrary library) {
        return Errors.argument("CommConfig field " + field + " needs NCCL " + NcclLibrary.versionString(since)
                + " or newer, but the loaded NCCL is " + library.version() + " (" + library.path() + "), whose "
                + "ncclConfig_t has no " + field + " and would silently ignore it. Leave " + field
                + " unset, or load a newer NCCL.");
    }

    private static IllegalArgumentException unsupportedValue(String what, int since, NcclLibrary library) {
        return Errors.argument("CommConfig " + what + " needs NCCL " + NcclLibrary.versionString(since)
                + " or newer, but the loaded NCCL is " + library.version() + " (" + library.path() + "), which refuses"
                + " it as invalid. Choose another CTA policy, or load a newer NCCL.");
    }

    /** @return whether operations on the communicator block the caller (the default) or return ncclInProgress */
    public boolean blocking() {
        return ints[NcclNative.CFG_BLOCKING] != 0;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("CommConfig[");
        String sep = "";
        for (int i = 0; i < ints.length; i++) {
            if (ints[i] != NcclNative.CONFIG_UNDEF_INT) {
                sb.append(sep).append(NAMES[i]).append('=').append(ints[i]);
                sep = ", ";
            }
        }
        if (netName != null) {
            sb.append(sep).append("netName=").append(netName);
            sep = ", ";
        }
        if (commName != null) {
            sb.append(sep).append("commName=").append(commName);
            sep = ", ";
        }
        if (watchdog != null) {
            sb.append(sep).append("watchdog=").append(watchdog ? "on" : "off");
            sep = ", ";
        }
        if (timeout != null) {
            sb.append(sep).append("timeout=").append(Durations.format(timeout));
            sep = ", ";
        }
        if (policy != null) {
            sb.append(sep).append("onFailure=").append(policy);
            sep = ", ";
        }
        if (traceBuffer != null) {
            sb.append(sep).append("traceBuffer=").append(traceBuffer);
            sep = ", ";
        }
        if (fingerprint != null) {
            sb.append(sep).append("fingerprint=").append(fingerprint);
        }
        if (checkCollectives != null) {
            sb.append(sep).append("checkCollectives=").append(checkCollectives);
            sep = ", ";
        }
        if (initTimeout != null) {
            sb.append(sep).append("initTimeout=").append(Durations.format(initTimeout));
        }
        return sb.append(']').toString();
    }

    /** Builds a {@link CommConfig}; each setter validates its value. */
    public static final class Builder {
        private final int[] ints = new int[NcclNative.CFG_INTS];
        private String netName;
        private String commName;
        private java.time.Duration timeout;
        private Boolean watchdog;
        private FailurePolicy policy;
        private FailureListener listener;
        private Integer traceBuffer;
        private Boolean checkCollectives;
        private Boolean fingerprint;
        private java.time.Duration initTimeout;

        private Builder() {
            java.util.Arrays.fill(ints, NcclNative.CONFIG_UNDEF_INT);
        }

        private Builder set(int index, int value) {
            ints[index] = value;
            return this;
        }

        private static int range(String name, int v, int lo, int hi) {
            if (v < lo || v > hi) {
                throw Errors.argument(name + " must be in " + lo + ".." + hi + ", got " + v);
            }
            return v;
        }

        /**
         * {@code blocking}: false makes NCCL calls return ncclInProgress and complete in the background.
         *
         * @param blocking true (the default) to block; false for nonblocking calls
         * @return this builder
         */
        public Builder blocking(boolean blocking) {
            return set(NcclNative.CFG_BLOCKING, blocking ? 1 : 0);
        }

        /**
         * {@code cgaClusterSize}: CUDA thread-block-cluster size, 0..8 (Hopper and newer).
         *
         * @param size the cluster size
         * @return this builder
         */
        public Builder cgaClusterSize(int size) {
            return set(NcclNative.CFG_CGA_CLUSTER_SIZE, range("cgaClusterSize", size, 0, 8));
        }

        /**
         * {@code minCTAs}: lower bound on CTAs (channels), 1..64.
         *
         * @param n the number of CTAs
         * @return this builder
         */
        public Builder minCTAs(int n) {
            return set(NcclNative.CFG_MIN_CTAS, range("minCTAs", n, 1, 64));
        }

        /**
         * {@code maxCTAs}: upper bound on CTAs (channels), 1..64.
         *
         * @param n the number of CTAs
         * @return this builder
         */
        public Builder maxCTAs(int n) {
            return set(NcclNative.CFG_MAX_CTAS, range("maxCTAs", n, 1, 64));
        }

        /**
         * {@code netName}: the network module to use, e.g. "IB" or "Socket".
         *
         * @param name the name, or null
         * @return this builder
         */
        public Builder netName(String name) {
            if (name != null && name.isBlank()) {
                throw Errors.argument("netName must not be blank (use null for NCCL's choice)");
            }
            this.netName = name;
            return this;
        }

        /**
         * {@code splitShare}: children made by split share the parent's resources.
         *
         * @param share true to share
         * @return this builder
         */
        public Builder splitShare(boolean share) {
            return set(NcclNative.CFG_SPLIT_SHARE, share ? 1 : 0);
        }

        /**
         * {@code trafficClass}: network traffic class (NCCL 2.26.2+), >= 0.
         *
         * @param tc the traffic class
         * @return this builder
         */
        public Builder trafficClass(int tc) {
            return set(NcclNative.CFG_TRAFFIC_CLASS, range("trafficClass", tc, 0, Integer.MAX_VALUE));
        }

        /**
         * {@code commName}: a name shown in NCCL's logs and profiler (NCCL 2.27+).
         *
         * @param name the name, or null
         * @return this builder
         */
        public Builder commName(String name) {
            if (name != null && name.isBlank()) {
                throw Errors.argument("commName must not be blank (use null for none)");
            }
            this.commName = name;
            return this;
        }

        /**
         * {@code collnetEnable} (NCCL 2.27+).
         *
         * @param enable true to enable
         * @return this builder
         */
        public Builder collnetEnable(boolean enable) {
            return set(NcclNative.CFG_COLLNET_ENABLE, enable ? 1 : 0);
        }

        /**
         * {@code CTAPolicy} as an {@code NCCL_CTA_POLICY_*} value: DEFAULT 0, EFFICIENCY 1 (NCCL 2.27.3+), ZERO 2
         * (2.28.3+), or EFFICIENCY | ZERO 3 (2.29.2+, where NCCL reads the policy as bits and ZERO wins). Prefer
         * {@link #ctaPolicy(CtaPolicy)}.
         *
         * @param policy the policy bits
         * @return this builder
         */
        public Builder ctaPolicy(int policy) {
            return set(NcclNative.CFG_CTA_POLICY, range("CTAPolicy", policy, 0, 3));
        }

        /**
         * {@code CTAPolicy}: how many CTAs (SMs) the communicator's collectives may take (see {@link CtaPolicy}).
         * A communicator is not made with a policy the loaded NCCL lacks: {@link CtaPolicy#DEFAULT} and
         * {@link CtaPolicy#EFFICIENCY} need NCCL 2.27.3, {@link CtaPolicy#ZERO} (copy-engine collectives on
         * symmetric windows) 2.28.3.
         *
         * @param policy the policy
         * @return this builder
         * @throws NullPointerException when {@code policy} is null
         */
        public Builder ctaPolicy(CtaPolicy policy) {
            if (policy == null) {
                throw Errors.nullArgument("policy");
            }
            return set(NcclNative.CFG_CTA_POLICY, policy.value());
        }

        /**
         * {@code shrinkShare} (NCCL 2.27+).
         *
         * @param share true to share
         * @return this builder
         */
        public Builder shrinkShare(boolean share) {
            return set(NcclNative.CFG_SHRINK_SHARE, share ? 1 : 0);
        }

        /**
         * {@code nvlsCTAs}: CTAs for NVLS collectives (NCCL 2.27+), >= 1.
         *
         * @param n the number of CTAs
         * @return this builder
         */
        public Builder nvlsCTAs(int n) {
            return set(NcclNative.CFG_NVLS_CTAS, range("nvlsCTAs", n, 1, 64));
        }

        /**
         * Sets any {@code ncclConfig_t} int field by its index ({@code NcclNative.CFG_*}); for fields without a
         * typed setter. NCCL validates the value; a communicator is not made with a field newer than the loaded
         * NCCL (see the class comment).
         *
         * @param index the field index, {@code NcclNative.CFG_*}
         * @param value the value; NCCL validates it
         * @return this builder
         */
        public Builder raw(int index, int value) {
            if (index < 0 || index >= NcclNative.CFG_INTS) {
                throw Errors.argument("config field index must be in 0.." + (NcclNative.CFG_INTS - 1) + ", got "
                        + index);
            }
            return set(index, value);
        }

        /**
         * How long an operation of the communicator may take before the watchdog declares it hung (nccl4j; not part
         * of {@code ncclConfig_t}). Replaces {@code NCCL4J_TIMEOUT} for this communicator.
         *
         * @param timeout longer than zero
         * @return this builder
         * @throws IllegalArgumentException when timeout is null, zero or negative
         */
        public Builder timeout(java.time.Duration timeout) {
            if (timeout == null || timeout.isZero() || timeout.isNegative()) {
                throw Errors.argument("timeout must be longer than zero, got " + timeout
                        + ": e.g. Duration.ofMinutes(10)");
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * How long making the communicator may take (nccl4j; not part of {@code ncclConfig_t}): the rendezvous of
         * {@link Communicator#fromEnvironment(CommConfig)} and {@code ncclCommInitRankConfig}, or a split or shrink.
         * NCCL is asked to make it without blocking and nccl4j waits; at the deadline it aborts what NCCL half made
         * and throws {@link InitTimeoutException}, naming the ranks that never arrived where they are known.
         * Replaces {@code NCCL4J_INIT_TIMEOUT} (default 5 minutes) for this communicator.
         *
         * @param initTimeout longer than zero
         * @return this builder
         * @throws IllegalArgumentException when initTimeout is null, zero or negative
         */
        public Builder initTimeout(java.time.Duration initTimeout) {
            if (initTimeout == null || initTimeout.isZero() || initTimeout.isNegative()) {
                throw Errors.argument("initTimeout must be longer than zero, got " + initTimeout
                        + ": e.g. Duration.ofMinutes(5)");
            }
            this.initTimeout = initTimeout;
            return this;
        }

        /**
         * Whether the watchdog watches the communicator (nccl4j). Replaces {@code NCCL4J_WATCHDOG}. The flight
         * recorder records either way.
         *
         * @param on false to leave the communicator unwatched
         * @return this builder
         */
        public Builder watchdog(boolean on) {
            this.watchdog = on;
            return this;
        }

        /**
         * What the watchdog does after a failure (nccl4j). Replaces {@code NCCL4J_ON_FAILURE}.
         *
         * @param policy {@link FailurePolicy#THROW}, {@link FailurePolicy#EXIT} or {@link FailurePolicy#RECOVER}; for
         *        {@link FailurePolicy#CALLBACK} use {@link #onFailure(FailureListener)}
         * @return this builder
         * @throws IllegalArgumentException for null or CALLBACK
         */
        public Builder onFailure(FailurePolicy policy) {
            if (policy == null || policy == FailurePolicy.CALLBACK) {
                throw Errors.argument("onFailure(" + policy + "): give THROW, EXIT or RECOVER; for CALLBACK give the "
                        + "listener, onFailure((comm, failure) -> ...)");
            }
            this.policy = policy;
            this.listener = null;
            return this;
        }

        /**
         * Calls {@code listener} after a failure ({@link FailurePolicy#CALLBACK}), as well as throwing in waiting
         * threads and later calls.
         *
         * @param listener called on the watchdog's thread
         * @return this builder
         * @throws NullPointerException when listener is null
         */
        public Builder onFailure(FailureListener listener) {
            if (listener == null) {
                throw Errors.nullArgument("listener");
            }
            this.policy = FailurePolicy.CALLBACK;
            this.listener = listener;
            return this;
        }

        /**
         * How many operations the flight recorder keeps for the communicator (nccl4j). Replaces
         * {@code NCCL4J_TRACE_BUFFER}. 0 turns the recorder off, which only a communicator without watchdog may do.
         *
         * @param operations 0 to 10,000,000
         * @return this builder
         * @throws IllegalArgumentException when out of range
         */
        public Builder traceBuffer(int operations) {
            if (operations < 0 || operations > org.nccl4j.trace.FlightRecorder.MAX_CAPACITY) {
                throw Errors.argument("traceBuffer must be from 0 to " + org.nccl4j.trace.FlightRecorder.MAX_CAPACITY
                        + " operations, got " + operations);
            }
            this.traceBuffer = operations;
            return this;
        }

        /**
         * Whether each collective first compares its sequence number, operation, count, type, operator and root
         * across ranks and throws on the first difference (nccl4j; costs an all-gather and a wait per collective).
         * Replaces {@code NCCL4J_CHECK_COLLECTIVES}.
         *
         * @param on true to check
         * @return this builder
         */
        public Builder checkCollectives(boolean on) {
            this.checkCollectives = on;
            return this;
        }

        /**
         * Whether the communicator keeps the running fingerprint of its collectives that the liveness channel
         * reports and rank 0 compares (on by default; a hash and a few array stores per collective, nothing
         * allocated). Off, rank 0 cannot name ranks that issued different collectives, and a departed rank's last
         * collective cannot be matched against this rank's pending ones (an abort's grace still applies). For
         * measuring its cost, or to rule it out.
         *
         * @param on false to turn it off
         * @return this builder
         */
        public Builder fingerprint(boolean on) {
            this.fingerprint = on;
            return this;
        }

        /** @return the configuration; checks {@code minCTAs <= maxCTAs} */
        public CommConfig build() {
            int min = ints[NcclNative.CFG_MIN_CTAS];
            int max = ints[NcclNative.CFG_MAX_CTAS];
            if (min != NcclNative.CONFIG_UNDEF_INT && max != NcclNative.CONFIG_UNDEF_INT && min > max) {
                throw Errors.argument("minCTAs (" + min + ") must not exceed maxCTAs (" + max + ")");
            }
            if (traceBuffer != null && traceBuffer == 0 && !Boolean.FALSE.equals(watchdog)) {
                throw Errors.argument("traceBuffer(0) turns the flight recorder off, which the watchdog needs: "
                        + "also set watchdog(false), or keep a buffer of 1 or more operations");
            }
            return new CommConfig(this);
        }
    }
}
