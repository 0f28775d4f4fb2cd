package org.nccl4j.tools.doctor;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.nccl4j.tools.doctor.Finding.Measurement;

/**
 * The path between two GPUs, concluded from a {@link Machine}'s facts without touching the machine, and what it should
 * carry; and the verdict on a bandwidth measured over it.
 *
 * <p>The path, in the order it is looked for, and its word in {@code nvidia-smi topo -m}'s matrix:
 * <table>
 * <caption>Paths</caption>
 * <tr><th>path</th><th>how it is recognised</th><th>word</th><th>expectation per direction</th></tr>
 * <tr><td>direct NVLink</td><td>active links of GPU i whose other end is GPU j's bus id</td><td>{@code NV<n>}, n the
 *     links</td><td>n x the link's rate ({@link Expectations#nvlinkPerLinkGBps})</td></tr>
 * <tr><td>NVLink through NVSwitch</td><td>both GPUs have active links whose other end is an NVSwitch
 *     ({@code nvmlDeviceGetNvLinkRemoteDeviceType}, or a remote bus id of domain {@code FFFFFFFF})</td>
 *     <td>{@code NV<n>}, n the smaller of the two GPUs' active switch links</td><td>the smaller of the two GPUs'
 *     switch links, up or down, x the link's rate: what the path carries when healthy</td></tr>
 * <tr><td>PCIe</td><td>{@link Machine#pcie()}: NVML's common ancestor</td><td>{@code PIX}, {@code PXB},
 *     {@code PHB}, {@code NODE}, {@code SYS}</td><td>the narrower of the two GPUs' PCIe links at their maximum
 *     generation and width ({@link Expectations#pcieGBps})</td></tr>
 * </table>
 * A pair through NVSwitch whose links are partly down is expected at the full count, so that a copy at a third of
 * the rate is a WARN (and says which GPU has links down); a direct link that is down cannot be told from a link that
 * was never there (NVML gives a down link no other end), so direct pairs are expected at their active links, and
 * the {@code nvlink} line says a link is down.
 *
 * <p>A copy across NUMA nodes ({@code SYS}) or between GPUs without peer access goes through the CPUs and host
 * memory, whose rate this table does not know: its percentage is printed, not judged.
 */
public final class Paths {
    /** What kind of path joins two GPUs. */
    public enum Kind {
        /** NVLinks from one GPU to the other. */
        NVLINK("nvlink"),
        /** NVLinks from each GPU to NVSwitches. */
        NVLINK_SWITCH("nvlink-switch"),
        /** PCIe: a switch, a host bridge, or across sockets. */
        PCIE("pcie"),
        /** Not known (no NVML). */
        UNKNOWN("unknown");

        private final String json;

        Kind(String json) {
            this.json = json;
        }

        /**
         * Its name in the doctor's JSON.
         *
         * @return e.g. {@code nvlink-switch}
         */
        public String json() {
            return json;
        }
    }

    /**
     * The path from one GPU to another.
     *
     * @param from the source GPU's ordinal
     * @param to the destination GPU's ordinal
     * @param kind what kind of path
     * @param word its word in {@code nvidia-smi topo -m}'s matrix ({@code NV18}, {@code PHB}, ..., {@code ?})
     * @param links NVLinks up on the path (for NVSwitch: the smaller of the two GPUs' active switch links); 0 for PCIe
     * @param linksBuilt NVLinks the path has when healthy (for NVSwitch: the smaller of the GPUs' switch links, up or
     *        down); 0 for PCIe
     * @param nvlinkVersion the NVLink major version, or -1
     * @param expectedGBps what it should carry per direction, GB/s; 0 when not known
     * @param judged whether a measured copy is judged against {@code expectedGBps} (not across sockets, nor without
     *        peer access)
     * @param description in words, e.g. {@code NVLink 4 through NVSwitch, 18 links}
     */
    public record Path(int from, int to, Kind kind, String word, int links, int linksBuilt, int nvlinkVersion,
            double expectedGBps, boolean judged, String description) {
    }

    private Paths() {
    }

    /**
     * Every ordered pair of distinct GPUs, GPU 0 to 1 first.
     *
     * @param m the machine
     * @return the paths
     */
    public static List<Path> all(Machine m) {
        List<Path> out = new ArrayList<>();
        int n = m.gpus().size();
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (i != j) {
                    out.add(between(m, i, j));
                }
            }
        }
        return out;
    }

    /**
     * The path from GPU i to GPU j.
     *
     * @param m the machine
     * @param i one GPU's ordinal
     * @param j another's
     * @return the path
     */
    public static Path between(Machine m, int i, int j) {
        Machine.Gpu a = m.gpus().get(i);
        Machine.Gpu b = m.gpus().get(j);
        Path direct = direct(a, b, i, j);
        if (direct == null) {
            direct = direct(b, a, i, j);
        }
        if (direct != null) {
            return direct;
        }
        Path nvswitch = nvswitch(a, b, i, j);
        if (nvswitch != null) {
            return nvswitch;
        }
        return pcie(m, a, b, i, j);
    }

    private static Path direct(Machine.Gpu a, Machine.Gpu b, int i, int j) {
        if (a.nvml() == null) {
            return null;
        }
        int links = 0;
        int version = -1;
        for (Machine.Link l : a.nvml().links()) {
            if (l.active() && l.remote() == Machine.Remote.GPU && l.remoteBusId() != null
                    && Probe.sameBus(l.remoteBusId(), b.busId())) {
                links++;
                version = Math.max(version, l.version());
            }
        }
        if (links == 0) {
            return null;
        }
        double perLink = Expectations.nvlinkPerLinkGBps(version, a.major(), a.minor());
        return new Path(i, j, Kind.NVLINK, "NV" + links, links, links, version, perLink * links, true,
                "NVLink " + version(version) + ", " + links + (links == 1 ? " link" : " links") + " direct");
    }

    private static Path nvswitch(Machine.Gpu a, Machine.Gpu b, int i, int j) {
        if (a.nvml() == null || b.nvml() == null) {
            return null;
        }
        int[] sa = switchLinks(a.nvml());
        int[] sb = switchLinks(b.nvml());
        if (sa[0] == 0 || sb[0] == 0) {
            return null;
        }
        int up = Math.min(sa[0], sb[0]);
        int built = Math.min(sa[1], sb[1]);
        int version = Math.min(sa[2], sb[2]);
        double perLink = Expectations.nvlinkPerLinkGBps(version, Math.min(a.major(), b.major()),
                a.major() <= b.major() ? a.minor() : b.minor());
        StringBuilder d = new StringBuilder("NVLink " + version(version) + " through NVSwitch, ");
        if (sa[0] == sa[1] && sb[0] == sb[1]) {
            d.append(built).append(" links");
        } else {
            d.append(built).append(" links built");
            if (sa[0] < sa[1]) {
                d.append(", GPU ").append(i).append(" has ").append(sa[0]).append(" of ").append(sa[1]).append(" up");
            }
            if (sb[0] < sb[1]) {
                d.append(", GPU ").append(j).append(" has ").append(sb[0]).append(" of ").append(sb[1]).append(" up");
            }
        }
        return new Path(i, j, Kind.NVLINK_SWITCH, "NV" + up, up, built, version, perLink * built, true,
                d.toString());
    }

    /**
     * A GPU's links to NVSwitches: {active, all, highest version}. A down link counts in all, since NVML gives it no
     * other end and on a GPU with switch links every link goes to a switch; a GPU with a link to another GPU or a CPU
     * has no switch path here.
     */
    private static int[] switchLinks(Machine.NvmlGpu g) {
        int active = 0;
        int all = 0;
        int version = -1;
        for (Machine.Link l : g.links()) {
            if (l.remote() == Machine.Remote.SWITCH) {
                all++;
                if (l.active()) {
                    active++;
                    version = Math.max(version, l.version());
                }
            } else if (l.remote() == Machine.Remote.UNKNOWN) {
                all += l.active() ? 0 : 1;
            } else {
                return new int[] {0, 0, -1};
            }
        }
        return new int[] {active, all, version};
    }

    private static Path pcie(Machine m, Machine.Gpu a, Machine.Gpu b, int i, int j) {
        String level = m.pcie() == null || m.pcie()[i][j] == null ? "?" : m.pcie()[i][j];
        Machine.NvmlGpu na = a.nvml();
        Machine.NvmlGpu nb = b.nvml();
        if (level.equals("?") || na == null || nb == null) {
            return new Path(i, j, Kind.UNKNOWN, level, 0, 0, -1, 0, false, "an unknown path");
        }
        double ea = Expectations.pcieGBps(na.pcieGenMax(), na.pcieWidthMax());
        double eb = Expectations.pcieGBps(nb.pcieGenMax(), nb.pcieWidthMax());
        Machine.NvmlGpu narrow = ea <= eb ? na : nb;
        double expected = Math.min(ea, eb);
        boolean peer = m.p2p() == null || m.p2p()[i][j];
        String where = switch (level) {
            case "PIX" -> "through one PCIe switch";
            case "PXB" -> "through several PCIe switches";
            case "PHB" -> "through a PCIe host bridge";
            case "NODE" -> "between host bridges of one NUMA node";
            case "SYS" -> "across NUMA nodes (the CPUs' interconnect)";
            default -> "over PCIe";
        };
        String link = expected > 0 ? "PCIe gen " + narrow.pcieGenMax() + " x" + narrow.pcieWidthMax() + " " : "PCIe ";
        String description = link + where + (peer ? "" : ", no peer access: staged through host memory");
        return new Path(i, j, Kind.PCIE, level, 0, 0, -1, expected, peer && !level.equals("SYS"), description);
    }

    private static String version(int v) {
        return v > 0 ? Integer.toString(v) : "?";
    }

    /**
     * The matrix of paths as {@code nvidia-smi topo -m} prints it: {@code X} on the diagonal.
     *
     * @param m the machine
     * @return {@code [i][j]}, or null without NVML's facts
     */
    public static String[][] matrix(Machine m) {
        int n = m.gpus().size();
        if (m.pcie() == null && m.gpus().stream().allMatch(g -> g.nvml() == null)) {
            return null;
        }
        String[][] t = new String[n][n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                t[i][j] = i == j ? "X" : between(m, i, j).word();
            }
        }
        return t;
    }

    /**
     * The verdict on a copy measured over a path: below {@link Expectations#WARN_FRACTION} of the expectation a
     * WARN, above the expectation a WARN that the path was misjudged (a copy cannot beat its link), else OK; with no
     * expectation, or on a path not judged, INFO.
     *
     * @param p the path
     * @param gbps the measured copy, GB/s
     * @return the finding, carrying the measurement
     */
    public static Finding judgeCopy(Path p, double gbps) {
        String subject = "GPU " + p.from() + " -> GPU " + p.to();
        String detail = String.format(Locale.ROOT, "copy %.1f GB/s over %s (%s)", gbps, p.word(), p.description());
        Measurement measured = new Measurement(gbps, p.expectedGBps(), p.word());
        if (p.expectedGBps() <= 0) {
            return Finding.info("bandwidth", subject, detail + ": no expectation for this path").with(measured);
        }
        String share = String.format(Locale.ROOT, "%s: %.0f %% of the %.0f GB/s", detail,
                100 * gbps / p.expectedGBps(), p.expectedGBps());
        if (gbps > p.expectedGBps()) {
            return misjudged(subject, share, measured);
        }
        if (!p.judged()) {
            return Finding.info("bandwidth", subject, share + " PCIe carries, not judged: the CPUs and host memory set "
                    + "this rate").with(measured);
        }
        String what = p.kind() == Kind.PCIE ? " the narrower PCIe link carries"
                : p.links() < p.linksBuilt() ? " its " + p.linksBuilt() + " links carry when all are up"
                : " the links carry";
        if (gbps < Expectations.WARN_FRACTION * p.expectedGBps()) {
            String fix = p.links() < p.linksBuilt() ? "NVLinks are down (see the nvlink lines above): check "
                    + "nvidia-smi nvlink --status; a reset (nvidia-smi -r) or the node's service may be needed"
                    : "below 70 %: look at the nvlink, pcie and health lines above, NCCL_P2P_DISABLE/NCCL_P2P_LEVEL, "
                    + "and other processes on the GPUs";
            return Finding.warn("bandwidth", subject, share + what, fix).with(measured);
        }
        return Finding.ok("bandwidth", subject, share + what).with(measured);
    }

    private static Finding misjudged(String subject, String share, Measurement measured) {
        return Finding.warn("bandwidth", subject, share + " the doctor expected: more than that path can carry, so "
                + "the path was misjudged and this measurement is not judged", "compare the matrix above with "
                + "nvidia-smi topo -m and nvidia-smi nvlink --status, and report the difference with the doctor's "
                + "--json output").with(measured);
    }

    /**
     * The verdict on an all-reduce's bus bandwidth over all the GPUs, against the slowest pair's expectation (of
     * equal ones, the pair with fewer links up, which is the one to name). Through
     * NVSwitch a bus bandwidth up to twice the links' rate is healthy (NVLink SHARP reduces inside the switch, and
     * bus bandwidth counts the traffic a ring would send); anything else above the expectation was misjudged.
     *
     * @param gbps the measured bus bandwidth, GB/s
     * @param gpus how many GPUs took part
     * @param paths every pair's path
     * @return the finding, carrying the measurement
     */
    public static Finding judgeAllReduce(double gbps, int gpus, List<Path> paths) {
        String detail = String.format(Locale.ROOT, "bus bandwidth %.1f GB/s over %d GPUs at 256 MiB", gbps, gpus);
        Path slowest = null;
        boolean allSwitch = !paths.isEmpty();
        for (Path p : paths) {
            if (slowest == null || p.expectedGBps() < slowest.expectedGBps()
                    || p.expectedGBps() == slowest.expectedGBps() && p.links() < slowest.links()) {
                slowest = p;
            }
            allSwitch &= p.kind() == Kind.NVLINK_SWITCH;
        }
        if (slowest == null || slowest.expectedGBps() <= 0) {
            return Finding.info("bandwidth", "all-reduce", detail + ": no expectation for its slowest path")
                    .with(new Measurement(gbps, 0, slowest == null ? "?" : slowest.word()));
        }
        double expected = slowest.expectedGBps();
        Measurement measured = new Measurement(gbps, expected, slowest.word());
        String share = String.format(Locale.ROOT, "%s: %.0f %% of the %.0f GB/s", detail, 100 * gbps / expected,
                expected);
        String what = " the slowest path (" + slowest.word() + ", GPU " + slowest.from() + " -> GPU " + slowest.to()
                + ") carries";
        if (gbps > expected) {
            if (allSwitch && gbps <= 2 * expected) {
                return Finding.ok("bandwidth", "all-reduce", share + what + ": above the links' rate, as NVLink "
                        + "SHARP (NVLS) reduces inside the switch").with(measured);
            }
            return misjudged("all-reduce", share, measured);
        }
        if (!slowest.judged()) {
            return Finding.info("bandwidth", "all-reduce", share + what + ", not judged: the CPUs and host memory "
                    + "set that path's rate").with(measured);
        }
        if (gbps < Expectations.ALL_REDUCE_WARN_FRACTION * expected) {
            return Finding.warn("bandwidth", "all-reduce", share + what, "below 50 %: look at the pair lines above; "
                    + "NCCL_ALGO/NCCL_PROTO or NCCL_P2P_* settings may hold it back").with(measured);
        }
        return Finding.ok("bandwidth", "all-reduce", share + what).with(measured);
    }
}
