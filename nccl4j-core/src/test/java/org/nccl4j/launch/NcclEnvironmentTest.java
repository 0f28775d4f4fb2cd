package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.NcclEnvironment.Algorithm;
import org.nccl4j.launch.NcclEnvironment.DebugLevel;
import org.nccl4j.launch.NcclEnvironment.DebugSubsystem;
import org.nccl4j.launch.NcclEnvironment.Protocol;
import org.nccl4j.launch.NcclEnvironment.TopologyLevel;
import org.slf4j.LoggerFactory;

class NcclEnvironmentTest {
    private ListAppender<ILoggingEvent> appender;
    private Logger logger;

    @BeforeEach
    void captureLog() {
        logger = (Logger) LoggerFactory.getLogger(NcclEnvironment.class);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        logger.setLevel(Level.DEBUG);
    }

    @AfterEach
    void releaseLog() {
        logger.detachAppender(appender);
        logger.setLevel(null);
    }

    private static IllegalArgumentException invalid(String name, String value) {
        return assertThrows(IllegalArgumentException.class, () -> NcclEnvironment.builder().set(name, value),
                name + "=" + value + " should be rejected");
    }

    private static String accepted(String name, String value) {
        return NcclEnvironment.builder().set(name, value).build().settings().get(name);
    }

    private List<String> warnings() {
        return appender.list.stream().filter(e -> e.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage)
                .collect(Collectors.toList());
    }

    @Test
    void typedSettersProduceNcclValues() {
        NcclEnvironment env = NcclEnvironment.builder()
                .algo(Algorithm.RING, Algorithm.NVLS_TREE)
                .protocolExcluding(Protocol.LL128)
                .debug(DebugLevel.INFO)
                .debugSubsys(DebugSubsystem.INIT, DebugSubsystem.NET, DebugSubsystem.ALLOC_HOST)
                .debugFile("/tmp/nccl.%h.%p.log")
                .socketIfname("^docker,lo")
                .ibHca("=mlx5_0:1,mlx5_1:1")
                .ibDisable(true)
                .p2pDisable(false)
                .p2pLevel(TopologyLevel.NVL)
                .shmDisable(true)
                .netGdrLevel(2)
                .buffSize(16L << 20)
                .nThreads(512)
                .minNChannels(4)
                .maxNChannels(16)
                .commId("10.1.2.3", 29500)
                .build();
        Map<String, String> expected = new TreeMap<>();
        expected.put("NCCL_ALGO", "Ring,NVLSTree");
        expected.put("NCCL_PROTO", "^LL128");
        expected.put("NCCL_DEBUG", "INFO");
        expected.put("NCCL_DEBUG_SUBSYS", "INIT,NET,ALLOC_HOST");
        expected.put("NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p.log");
        expected.put("NCCL_SOCKET_IFNAME", "^docker,lo");
        expected.put("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1");
        expected.put("NCCL_IB_DISABLE", "1");
        expected.put("NCCL_P2P_DISABLE", "0");
        expected.put("NCCL_P2P_LEVEL", "NVL");
        expected.put("NCCL_SHM_DISABLE", "1");
        expected.put("NCCL_NET_GDR_LEVEL", "2");
        expected.put("NCCL_BUFFSIZE", "16777216");
        expected.put("NCCL_NTHREADS", "512");
        expected.put("NCCL_MIN_NCHANNELS", "4");
        expected.put("NCCL_MAX_NCHANNELS", "16");
        expected.put("NCCL_COMM_ID", "10.1.2.3:29500");
        assertEquals(expected, env.settings());
        assertEquals(expected.keySet(), NcclEnvironment.knownVariables().stream().collect(Collectors.toSet()));
    }

    @Test
    void otherTypedForms() {
        NcclEnvironment env = NcclEnvironment.builder()
                .algoExcluding(Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN)
                .protocol(Protocol.SIMPLE, Protocol.LL)
                .debugSubsysExcluding(DebugSubsystem.CALL)
                .p2pLevel(5)
                .netGdrLevel(TopologyLevel.PHB)
                .commId("fd00::7", 80)
                .build();
        assertEquals("^CollnetDirect,CollnetChain", env.settings().get("NCCL_ALGO"));
        assertEquals("Simple,LL", env.settings().get("NCCL_PROTO"));
        assertEquals("^CALL", env.settings().get("NCCL_DEBUG_SUBSYS"));
        assertEquals("5", env.settings().get("NCCL_P2P_LEVEL"));
        assertEquals("PHB", env.settings().get("NCCL_NET_GDR_LEVEL"));
        assertEquals("[fd00::7]:80", env.settings().get("NCCL_COMM_ID"));
        assertEquals(java.util.Optional.of("Simple,LL"), env.get("NCCL_PROTO"));
        assertTrue(env.get("NCCL_DEBUG").isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {"Ring", "ring", "RING,tree", "^NVLS,NVLSTree", "PAT", "CollnetDirect,CollnetChain",
        "allreduce:tree,ring;broadcast:ring", "ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring",
        "AllReduce:^nvls", "reducescatter:pat;allgather:ring,pat;reduce:ring"})
    void algoAcceptsNcclSyntax(String spec) {
        assertEquals(spec, accepted("NCCL_ALGO", spec));
    }

    @Test
    void misspelledAlgoListsTheValidNames() {
        IllegalArgumentException e = invalid("NCCL_ALGO", "Rnig");
        assertTrue(e.getMessage().contains("NCCL_ALGO=\"Rnig\""), e.getMessage());
        assertTrue(e.getMessage().contains("unknown algorithm \"Rnig\""), e.getMessage());
        for (String name : List.of("Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT")) {
            assertTrue(e.getMessage().contains(name), "message lacks " + name + ": " + e.getMessage());
        }
        IllegalArgumentException typed = assertThrows(IllegalArgumentException.class,
                () -> NcclEnvironment.builder().algo("Ring,Rnig"));
        assertTrue(typed.getMessage().contains("\"Rnig\""), typed.getMessage());
    }

    @Test
    void algoSyntaxErrorsAreExplained() {
        assertTrue(invalid("NCCL_ALGO", "ring;tree").getMessage().contains("lacks a collective"));
        IllegalArgumentException coll = invalid("NCCL_ALGO", "sendrecv:ring");
        assertTrue(coll.getMessage().contains("unknown collective \"sendrecv\""), coll.getMessage());
        assertTrue(coll.getMessage().contains("broadcast, reduce, allgather, reducescatter, allreduce"),
                coll.getMessage());
        assertTrue(invalid("NCCL_ALGO", "allreduce:tree:ring").getMessage().contains("more than one ':'"));
        assertTrue(invalid("NCCL_ALGO", "allreduce:").getMessage().contains("empty list"));
        assertTrue(invalid("NCCL_ALGO", "^").getMessage().contains("empty list"));
        assertTrue(invalid("NCCL_ALGO", "ring,").getMessage().contains("empty algorithm name"));
        assertTrue(invalid("NCCL_ALGO", " ring").getMessage().contains("unknown algorithm \" ring\""));
        assertTrue(invalid("NCCL_ALGO", "").getMessage().contains("is empty"));
        assertThrows(IllegalArgumentException.class, () -> NcclEnvironment.builder().algo(new Algorithm[0]));
    }

    @Test
    void protocolIsCheckedLikeAlgo() {
        assertEquals("^LL128;allreduce:LL128", accepted("NCCL_PROTO", "^LL128;allreduce:LL128"));
        assertEquals("LL,Simple;allreduce:^LL", accepted("NCCL_PROTO", "LL,Simple;allreduce:^LL"));
        assertEquals("simple", accepted("NCCL_PROTO", "simple"));
        IllegalArgumentException e = invalid("NCCL_PROTO", "LL64");
        assertTrue(e.getMessage().contains("unknown protocol \"LL64\""), e.getMessage());
        assertTrue(e.getMessage().contains("LL, LL128, Simple"), e.getMessage());
    }

    @Test
    void debugLevelUsesNcclNames() {
        assertEquals("INFO", accepted("NCCL_DEBUG", "info"));
        assertEquals("ABORT", accepted("NCCL_DEBUG", "Abort"));
        IllegalArgumentException e = invalid("NCCL_DEBUG", "NONE");
        assertTrue(e.getMessage().contains("VERSION, WARN, INFO, ABORT, TRACE"), e.getMessage());
    }

    @Test
    void debugSubsysAcceptsListsAndNegation() {
        assertEquals("INIT,NET", accepted("NCCL_DEBUG_SUBSYS", "INIT,NET"));
        assertEquals("^coll,P2P", accepted("NCCL_DEBUG_SUBSYS", "^coll,P2P"));
        assertEquals("ALL", accepted("NCCL_DEBUG_SUBSYS", "ALL"));
        assertTrue(invalid("NCCL_DEBUG_SUBSYS", "INIT;NET").getMessage().contains("';' is not allowed"));
        IllegalArgumentException e = invalid("NCCL_DEBUG_SUBSYS", "INIT,NETWORK");
        assertTrue(e.getMessage().contains("unknown subsystem \"NETWORK\""), e.getMessage());
        assertTrue(e.getMessage().contains("BOOTSTRAP"), e.getMessage());
    }

    @Test
    void levelsAcceptNamesAndIntegers() {
        for (String var : List.of("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL")) {
            assertEquals("NVL", accepted(var, "nvl"));
            assertEquals("SYS", accepted(var, "SYS"));
            assertEquals("3", accepted(var, "3"));
            assertEquals("3", accepted(var, "03"));
            IllegalArgumentException e = invalid(var, "NVX");
            assertTrue(e.getMessage().contains("[LOC, NVL, PIX, PXB, PHB, SYS]"), e.getMessage());
            invalid(var, "-1");
        }
        assertThrows(IllegalArgumentException.class, () -> NcclEnvironment.builder().p2pLevel(-2));
    }

    @Test
    void booleansAreZeroOrOne() {
        for (String var : List.of("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE")) {
            assertEquals("1", accepted(var, "1"));
            assertEquals("0", accepted(var, "0"));
            assertTrue(invalid(var, "true").getMessage().contains("expected 0 or 1"));
            invalid(var, "2");
        }
    }

    @Test
    void sizesAndCountsArePositive() {
        assertEquals("4194304", accepted("NCCL_BUFFSIZE", "4194304"));
        assertTrue(invalid("NCCL_BUFFSIZE", "0").getMessage().contains("positive integer"));
        invalid("NCCL_BUFFSIZE", "-4");
        invalid("NCCL_BUFFSIZE", "4MB");
        assertThrows(IllegalArgumentException.class, () -> NcclEnvironment.builder().buffSize(0));
        assertEquals("64", accepted("NCCL_NTHREADS", "64"));
        assertTrue(invalid("NCCL_NTHREADS", "96").getMessage().contains("64, 128, 256, 512"));
        assertThrows(IllegalArgumentException.class, () -> NcclEnvironment.builder().nThreads(1024));
        assertEquals("32", accepted("NCCL_MAX_NCHANNELS", "32"));
        invalid("NCCL_MIN_NCHANNELS", "0");
        invalid("NCCL_MAX_NCHANNELS", "99999999999");
    }

    @Test
    void minChannelsMayNotExceedMax() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NcclEnvironment.builder().minNChannels(16).maxNChannels(8).build());
        assertTrue(e.getMessage().contains("NCCL_MIN_NCHANNELS=16 is greater than NCCL_MAX_NCHANNELS=8"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> NcclEnvironment.builder().set("NCCL_MAX_NCHANNELS", "2").set("NCCL_MIN_NCHANNELS", "3").build());
        assertEquals("8", NcclEnvironment.builder().minNChannels(8).maxNChannels(8).build().settings()
                .get("NCCL_MIN_NCHANNELS"));
        assertEquals(1, NcclEnvironment.builder().minNChannels(64).build().settings().size());
    }

    @ParameterizedTest
    @ValueSource(strings = {"10.0.0.1:29500", "[fd00::1]:29500", "[::1]:1", "node-01.cluster:65535",
        "[::ffff:10.0.0.1]:80", "[fe80::1%eth0]:29500", "localhost:8080", "[1:2:3:4:5:6:7:8]:9"})
    void commIdAcceptsHostPort(String value) {
        assertEquals(value, accepted("NCCL_COMM_ID", value));
    }

    @Test
    void commIdRejectsMalformedAddresses() {
        assertTrue(invalid("NCCL_COMM_ID", "10.0.0.1").getMessage().contains("missing host or port"));
        assertTrue(invalid("NCCL_COMM_ID", "10.0.0.256:80").getMessage().contains("invalid IPv4 address"));
        assertTrue(invalid("NCCL_COMM_ID", "host:0").getMessage().contains("invalid port \"0\""));
        assertTrue(invalid("NCCL_COMM_ID", "host:65536").getMessage().contains("invalid port \"65536\""));
        assertTrue(invalid("NCCL_COMM_ID", "fd00::1:29500").getMessage().contains("must be in brackets"));
        assertTrue(invalid("NCCL_COMM_ID", "[fd00:::1]:80").getMessage().contains("invalid IPv6 address"));
        assertTrue(invalid("NCCL_COMM_ID", "[1:2:3:4:5:6:7:8:9]:80").getMessage().contains("invalid IPv6"));
        assertTrue(invalid("NCCL_COMM_ID", "bad_host:80").getMessage().contains("invalid host name"));
        assertTrue(invalid("NCCL_COMM_ID", ":80").getMessage().contains("missing host or port"));
        assertTrue(invalid("NCCL_COMM_ID", "host:http").getMessage().contains("port from 1 to 65535"));
    }

    @Test
    void interfaceListsFollowNcclPrefixSyntax() {
        for (String var : List.of("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA")) {
            for (String ok : List.of("^docker,lo", "=eth0", "^=docker0", "eth", "mlx5_0:1,mlx5_1:2", "=mlx5_0:1",
                    "ib0.8001", "enp1s0f0np0", "=mlx5_0:1:0,mlx5_1:1:1", "mlx5_0:1:0:1")) {
                assertEquals(ok, accepted(var, ok));
            }
            assertTrue(invalid(var, "^").getMessage().contains("no interface given"));
            assertTrue(invalid(var, "eth0,").getMessage().contains("invalid entry \"\""));
            assertTrue(invalid(var, "eth 0").getMessage().contains("invalid entry \"eth 0\""));
            invalid(var, "mlx5_0:x");
            invalid(var, "mlx5_0:1:x");
            invalid(var, "mlx5_0:1:0:1:2");
            assertTrue(invalid(var, "mlx5_0:0").getMessage().contains("port 0"));
            invalid(var, "=^eth0");
        }
    }

    @Test
    void debugFileRejectsTilde() {
        assertTrue(invalid("NCCL_DEBUG_FILE", "~/nccl.log").getMessage().contains("does not expand '~'"));
        assertEquals("nccl.%h.%p", accepted("NCCL_DEBUG_FILE", "nccl.%h.%p"));
    }

    @Test
    void namesMustBeNcclVariables() {
        IllegalArgumentException lower = invalid("nccl_algo", "Ring");
        assertTrue(lower.getMessage().contains("\"nccl_algo\" is not an NCCL variable name"), lower.getMessage());
        IllegalArgumentException other = invalid("LD_PRELOAD", "x.so");
        assertTrue(other.getMessage().contains("CUDA_VISIBLE_DEVICES"), other.getMessage());
        invalid("NCCL_", "1");
        invalid("NCCL_A-B", "1");
        invalid("NCCL_ALGO=", "1");
        assertEquals("0,1", accepted("CUDA_VISIBLE_DEVICES", "0,1"));
        assertEquals("any value", accepted("NCCL_SOME_NEW_KNOB", "any value"));
        assertTrue(invalid("NCCL_SOME_NEW_KNOB", "a\0b").getMessage().contains("NUL"));
        assertTrue(invalid("NCCL_SOME_NEW_KNOB", "").getMessage().contains("is empty"));
        assertThrows(NullPointerException.class, () -> NcclEnvironment.builder().set("NCCL_ALGO", null));
    }

    @Test
    void propertyNamesMapToVariables() {
        assertEquals("NCCL_ALGO", NcclEnvironment.variableForProperty("nccl.algo"));
        assertEquals("NCCL_DEBUG_SUBSYS", NcclEnvironment.variableForProperty("nccl.debug.subsys"));
        assertEquals("NCCL_DEBUG_SUBSYS", NcclEnvironment.variableForProperty("nccl.debug_subsys"));
        assertEquals("NCCL_IB_HCA", NcclEnvironment.variableForProperty("nccl.ib.hca"));
        assertEquals("NCCL_P2P_LEVEL", NcclEnvironment.variableForProperty("nccl.p2p.level"));
        for (String bad : List.of("nccl.Algo", "nccl.", "nccl..algo", "nccl.algo.", "nccl.ib-hca", "ncclx.algo")) {
            assertThrows(IllegalArgumentException.class, () -> NcclEnvironment.variableForProperty(bad), bad);
        }
    }

    @Test
    void systemPropertiesMergeInCallOrder() {
        Properties p = new Properties();
        p.setProperty("nccl.algo", "Tree");
        p.setProperty("nccl.debug.subsys", "INIT,NET");
        p.setProperty("nccl.ib_disable", "1");
        p.setProperty("nccl4j.library", "/opt/libnccl.so.2");
        p.setProperty("java.version", "17");
        NcclEnvironment propsWin = NcclEnvironment.builder().algo(Algorithm.RING).systemProperties(p).build();
        assertEquals(Map.of("NCCL_ALGO", "Tree", "NCCL_DEBUG_SUBSYS", "INIT,NET", "NCCL_IB_DISABLE", "1"),
                propsWin.settings());
        NcclEnvironment setterWins = NcclEnvironment.builder().systemProperties(p).algo(Algorithm.RING).build();
        assertEquals("Ring", setterWins.settings().get("NCCL_ALGO"));
    }

    @Test
    void invalidSystemPropertyIsNamed() {
        Properties p = new Properties();
        p.setProperty("nccl.algo", "Rnig");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NcclEnvironment.builder().systemProperties(p));
        assertTrue(e.getMessage().startsWith("system property nccl.algo (NCCL_ALGO): "), e.getMessage());
        assertTrue(e.getMessage().contains("CollnetDirect"), e.getMessage());
        Properties q = new Properties();
        q.setProperty("nccl.Debug", "INFO");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NcclEnvironment.builder().systemProperties(q))
                .getMessage().contains("\"nccl.Debug\""));
    }

    @Test
    void fromSystemPropertiesReadsTheJvm() {
        System.setProperty("nccl.nthreads", "256");
        System.setProperty("nccl.debug", "warn");
        try {
            NcclEnvironment env = NcclEnvironment.fromSystemProperties();
            assertEquals("256", env.settings().get("NCCL_NTHREADS"));
            assertEquals("WARN", env.settings().get("NCCL_DEBUG"));
        } finally {
            System.clearProperty("nccl.nthreads");
            System.clearProperty("nccl.debug");
        }
    }

    @Test
    void builtEnvironmentIsImmutable() {
        NcclEnvironment.Builder b = NcclEnvironment.builder().debug(DebugLevel.WARN);
        NcclEnvironment env = b.build();
        b.debug(DebugLevel.TRACE).nThreads(64);
        assertEquals(Map.of("NCCL_DEBUG", "WARN"), env.settings());
        assertThrows(UnsupportedOperationException.class, () -> env.settings().put("NCCL_ALGO", "Ring"));
        NcclEnvironment derived = env.toBuilder().remove("NCCL_DEBUG").nThreads(128).build();
        assertEquals(Map.of("NCCL_NTHREADS", "128"), derived.settings());
        assertEquals(Map.of("NCCL_DEBUG", "WARN"), env.settings());
        assertEquals(env, NcclEnvironment.builder().debug(DebugLevel.WARN).build());
        assertEquals("NcclEnvironment[NCCL_DEBUG=WARN]", env.toString());
        assertTrue(NcclEnvironment.empty().settings().isEmpty());
    }

    @Test
    void applyWritesOnlyChangedVariables() {
        MapEnvironment process = new MapEnvironment().with("NCCL_DEBUG", "WARN").with("NCCL_ALGO", "Tree");
        NcclEnvironment env = NcclEnvironment.builder().debug(DebugLevel.WARN).algo("Ring").buffSize(1 << 22).build();
        List<String> changed = env.apply(process, () -> false);
        assertEquals(List.of("NCCL_ALGO", "NCCL_BUFFSIZE"), changed);
        assertEquals(List.of("NCCL_ALGO=Ring", "NCCL_BUFFSIZE=4194304"), process.writes);
        assertEquals("Ring", process.get("NCCL_ALGO"));
        assertEquals(List.of(), env.apply(process, () -> false));
        assertEquals(2, process.writes.size());
        assertEquals(List.of(), warnings());
    }

    @Test
    void applyAfterInitializationWarnsForEachChangedVariable() {
        MapEnvironment process = new MapEnvironment().with("NCCL_DEBUG", "INFO");
        NcclEnvironment env = NcclEnvironment.builder().debug(DebugLevel.INFO).algo("Ring").protocol("Simple").build();
        List<String> changed = env.apply(process, () -> true);
        assertEquals(List.of("NCCL_ALGO", "NCCL_PROTO"), changed);
        assertEquals("Simple", process.get("NCCL_PROTO"), "the variables are still set");
        List<String> w = warnings();
        assertEquals(2, w.size(), w.toString());
        assertTrue(w.get(0).startsWith("NCCL_ALGO set to \"Ring\" (was unset) after NCCL was initialized"), w.get(0));
        assertTrue(w.get(0).contains("no effect on the NCCL already running"), w.get(0));
        assertTrue(w.get(1).startsWith("NCCL_PROTO set to \"Simple\""), w.get(1));
    }

    @Test
    void staticHookDecidesWhetherApplyWarns() {
        BooleanSupplier saved = NcclEnvironment.ncclInitializedHook();
        String name = "NCCL_NCCL4J_TEST_HOOK";
        try {
            NcclEnvironment.ncclInitializedHook(() -> true);
            NcclEnvironment.builder().set(name, "late").build().apply();
            assertEquals(1, warnings().size());
            assertTrue(warnings().get(0).startsWith(name + " set to \"late\""), warnings().get(0));
            NcclEnvironment.ncclInitializedHook(() -> false);
            NcclEnvironment.builder().set(name, "early").build().apply();
            assertEquals(1, warnings().size(), "no warning before initialization");
            assertEquals("early", NcclNative.getenv(name));
        } finally {
            NcclEnvironment.ncclInitializedHook(saved);
            NcclNative.unsetenv(name);
        }
    }

    @Test
    void effectiveReadsTheLiveEnvironment() {
        MapEnvironment process = new MapEnvironment()
                .with("NCCL_IB_HCA", "mlx5_2")        // known, set by someone else
                .with("NCCL_UNRELATED_KNOB", "7")     // neither known nor configured
                .with("NCCL_ALGO", "Tree");           // configured differently
        NcclEnvironment env = NcclEnvironment.builder().algo("Ring").set("NCCL_CUSTOM_THING", "x").build();
        assertEquals(Map.of("NCCL_IB_HCA", "mlx5_2", "NCCL_ALGO", "Tree"), env.effective(process));
        env.apply(process, () -> false);
        assertEquals(Map.of("NCCL_IB_HCA", "mlx5_2", "NCCL_ALGO", "Ring", "NCCL_CUSTOM_THING", "x"),
                env.effective(process));
        assertEquals(List.of("NCCL_ALGO", "NCCL_CUSTOM_THING", "NCCL_IB_HCA"),
                List.copyOf(env.effective(process).keySet()), "sorted by name");
    }

    @Test
    void reportShowsLiveAndConfiguredValues() {
        MapEnvironment process = new MapEnvironment().with("NCCL_IB_HCA", "mlx5_2").with("NCCL_ALGO", "Tree");
        NcclEnvironment env = NcclEnvironment.builder().algo("Ring").debug(DebugLevel.WARN).build();
        process.with("NCCL_DEBUG", "WARN");
        String report = env.report(process, () -> false);
        assertTrue(report.startsWith("NCCL environment: 2 configured, NCCL not yet initialized\n"), report);
        assertTrue(report.contains("NCCL_ALGO          = Tree   [configured \"Ring\", not in effect: call apply()]"),
                report);
        assertTrue(report.contains("NCCL_DEBUG         = WARN   [configured]"), report);
        assertTrue(report.contains("NCCL_IB_HCA        = mlx5_2   [from the process environment]"), report);
        assertTrue(report.contains("NCCL_NTHREADS      = (unset)\n"), report);
        assertEquals(1 + NcclEnvironment.knownVariables().size(), report.split("\n").length);
        assertTrue(env.report(process, () -> true).contains("already initialized"));
    }

    @Test
    void realProcessEnvironmentRoundTrip() {
        String raw = "NCCL_NCCL4J_TEST_ROUNDTRIP";
        assertNull(NcclNative.getenv(raw), "test variable must start unset");
        try {
            NcclEnvironment env = NcclEnvironment.builder().set(raw, "value-1").build();
            assertEquals(List.of(raw), env.apply());
            assertEquals("value-1", NcclNative.getenv(raw));
            assertEquals("value-1", env.effective().get(raw));
            assertTrue(env.report().contains(raw + " = value-1   [configured]"), env.report());
            assertEquals(List.of(), env.apply(), "second apply changes nothing");
            NcclEnvironment next = env.toBuilder().set(raw, "value-2").build();
            assertEquals(List.of(raw), next.apply());
            assertEquals("value-2", ProcessEnvironment.live().get(raw));
            assertFalse(System.getenv().containsKey(raw), "the JVM's copy does not see it; NCCL does");
        } finally {
            NcclNative.unsetenv(raw);
        }
        assertNull(NcclNative.getenv(raw));
    }
}
