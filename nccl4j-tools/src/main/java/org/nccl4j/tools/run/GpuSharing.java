package org.nccl4j.tools.run;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * How {@link Launcher} places N ranks on the G GPUs of this machine, and the checks before it starts any.
 *
 * <p>Without {@code --share-gpu} each rank needs a GPU of its own: {@code -np} above the GPU count is refused
 * (when no GPU is found at all, the count is not checked: the ranks may need none). With {@code --share-gpu} and
 * N above G, rank r runs on device {@code r mod G} and gets, unless already set in the launcher's environment,
 * {@code NCCL4J_DEVICE=r mod G}, {@code NCCL_HOSTID=nccl4j-host<r>} (NCCL then treats each rank as a host of its
 * own, which lets several ranks use one GPU) and {@code NCCL_SOCKET_IFNAME=lo} (those "hosts" talk over the
 * loopback interface). That is a mode for development, CI and tests: traffic goes over sockets, not NVLink or
 * PCIe peer-to-peer. At most {@value #MAX_RANKS_PER_GPU} ranks share one GPU.
 *
 * <p>The GPU count is, in this order: the number of entries of {@code CUDA_VISIBLE_DEVICES} when it is set (up
 * to the first that is neither a device ordinal nor a {@code GPU-}/{@code MIG-} UUID, as CUDA reads it; empty
 * means none); the number of GPUs in {@code /proc/driver/nvidia/gpus}; the {@code GPU} lines of
 * {@code nvidia-smi -L}; else 0.
 */
final class GpuSharing {
    /** The most ranks that {@code --share-gpu} puts on one GPU. */
    static final int MAX_RANKS_PER_GPU = 64;
    /** The {@code NCCL_HOSTID} of rank r is this prefix and r. */
    static final String HOST_ID_PREFIX = "nccl4j-host";

    /** The GPUs found, and where the count came from (for messages). */
    record Count(int gpus, String source) {
    }

    /** A bad combination of {@code -np}, {@code --share-gpu} and the GPUs found; the message says what to do. */
    static final class Refusal extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        Refusal(String message) {
            super(message);
        }
    }

    private final int ranks;
    private final int gpus;
    private final boolean sharing;
    private final Map<String, String> env;
    private final List<String> notices = new ArrayList<>();

    private GpuSharing(int ranks, int gpus, boolean sharing, Map<String, String> env) {
        this.ranks = ranks;
        this.gpus = gpus;
        this.sharing = sharing;
        this.env = env;
    }

    /**
     * Checks {@code ranks} against the GPUs found and works out the placement.
     *
     * @param ranks the number of ranks ({@code -np})
     * @param shareGpu whether {@code --share-gpu} was given
     * @param count the GPUs found
     * @param env the launcher's environment, which every rank inherits
     * @return the placement
     * @throws Refusal when the ranks do not fit, with the line to print
     */
    static GpuSharing plan(int ranks, boolean shareGpu, Count count, Map<String, String> env) {
        int g = count.gpus();
        if (!shareGpu) {
            if (g > 0 && ranks > g) {
                throw new Refusal("-np " + ranks + " is more than the " + gpus(g) + " found (" + count.source()
                        + "): add --share-gpu to run several ranks on one GPU (for development and tests), or use -np "
                        + g + " or less");
            }
            return new GpuSharing(ranks, g, false, env);
        }
        if (g == 0) {
            throw new Refusal("--share-gpu needs at least one GPU, and none was found (" + count.source() + "): run"
                    + " on a machine with an NVIDIA GPU and driver, or leave out --share-gpu");
        }
        int perGpu = (ranks + g - 1) / g;
        if (perGpu > MAX_RANKS_PER_GPU) {
            throw new Refusal("-np " + ranks + " with --share-gpu puts " + perGpu + " ranks on one GPU (" + gpus(g)
                    + " found); at most " + MAX_RANKS_PER_GPU + " ranks share a GPU: use -np "
                    + (long) MAX_RANKS_PER_GPU * g + " or less");
        }
        GpuSharing s = new GpuSharing(ranks, g, ranks > g, env);
        if (!s.sharing) {
            s.notices.add("--share-gpu: " + ranks + " rank" + (ranks > 1 ? "s" : "") + " on " + gpus(g)
                    + ", one GPU each: nothing to share");
            return s;
        }
        String hostId = env.get("NCCL_HOSTID");
        if (hostId != null) {
            s.notices.add("warning: NCCL_HOSTID=" + hostId + " is set and kept for every rank: ranks that share a GPU"
                    + " may collide (NCCL refuses two ranks of one host on one GPU); unset it to give each rank its"
                    + " own");
        }
        s.notices.add(ranks + " ranks share " + gpus(g) + " (rank r on device " + (env.containsKey("NCCL4J_DEVICE")
                ? "NCCL4J_DEVICE=" + env.get("NCCL4J_DEVICE") : "r mod " + g) + ", NCCL_HOSTID="
                + (hostId != null ? hostId : HOST_ID_PREFIX + "<r>") + ", NCCL_SOCKET_IFNAME="
                + env.getOrDefault("NCCL_SOCKET_IFNAME", "lo") + "): for development and tests; ranks talk over"
                + " sockets, not NVLink");
        return s;
    }

    private static String gpus(int g) {
        return g + " GPU" + (g == 1 ? "" : "s");
    }

    /** @return whether ranks share GPUs (--share-gpu with more ranks than GPUs) */
    boolean sharing() {
        return sharing;
    }

    /** @return the lines to print before the ranks start (without the "nccl4j-run: " prefix) */
    List<String> notices() {
        return notices;
    }

    /**
     * Adds what rank {@code r} needs to share a GPU to its environment (a copy of the launcher's); nothing when
     * not sharing. A variable the launcher's environment already holds is kept.
     *
     * @param r the rank
     * @param rankEnv the rank's environment
     */
    void addTo(int r, Map<String, String> rankEnv) {
        if (!sharing) {
            return;
        }
        putUnlessSet(rankEnv, "NCCL4J_DEVICE", Integer.toString(r % gpus));
        putUnlessSet(rankEnv, "NCCL_HOSTID", HOST_ID_PREFIX + r);
        putUnlessSet(rankEnv, "NCCL_SOCKET_IFNAME", "lo");
    }

    private void putUnlessSet(Map<String, String> rankEnv, String name, String value) {
        if (!env.containsKey(name)) {
            rankEnv.put(name, value);
        }
    }

    /**
     * Counts the GPUs of this machine that the ranks can use; see the class documentation for the order.
     *
     * @param env the launcher's environment (for {@code CUDA_VISIBLE_DEVICES})
     * @param proc the {@code /proc} directory
     * @return the count and where it came from
     */
    static Count count(Map<String, String> env, Path proc) {
        String visible = env.get("CUDA_VISIBLE_DEVICES");
        if (visible != null) {
            return new Count(visibleEntries(visible), "CUDA_VISIBLE_DEVICES=" + visible);
        }
        Path gpus = proc.resolve("driver/nvidia/gpus");
        if (Files.isDirectory(gpus)) {
            int n = 0;
            try (DirectoryStream<Path> d = Files.newDirectoryStream(gpus)) {
                for (Path ignored : d) {
                    n++;
                }
                return new Count(n, gpus.toString());
            } catch (IOException | RuntimeException e) {
                // unreadable: ask nvidia-smi
            }
        }
        int n = nvidiaSmiGpus();
        if (n >= 0) {
            return new Count(n, "nvidia-smi -L");
        }
        return new Count(0, "no " + gpus + ", no nvidia-smi");
    }

    /** CUDA's reading of CUDA_VISIBLE_DEVICES: entries up to the first invalid one. */
    static int visibleEntries(String value) {
        if (value.isBlank()) {
            return 0;
        }
        int n = 0;
        for (String e : value.split(",", -1)) {
            String t = e.strip();
            if (t.matches("[0-9]+") || t.startsWith("GPU-") || t.startsWith("MIG-")) {
                n++;
            } else {
                break;
            }
        }
        return n;
    }

    /** The number of "GPU n:" lines of {@code nvidia-smi -L}, or -1 when it cannot be run (or takes over 10 s). */
    private static int nvidiaSmiGpus() {
        Path out = null;
        try {
            out = Files.createTempFile("nccl4j-run-nvidia-smi", ".txt");
            Process p = new ProcessBuilder("nvidia-smi", "-L").redirectErrorStream(true)
                    .redirectOutput(out.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return -1;
            }
            return p.exitValue() != 0 ? -1
                    : (int) Files.readAllLines(out, StandardCharsets.UTF_8).stream()
                            .filter(l -> l.startsWith("GPU ")).count();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        } finally {
            if (out != null) {
                try {
                    Files.deleteIfExists(out);
                } catch (IOException e) {
                    // a temporary file left behind
                }
            }
        }
    }
}
