package org.nccl4j.tools.doctor;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.NcclEnvironment;
import org.nccl4j.tools.doctor.Finding.Status;

/**
 * {@code nccl4j-doctor --preflight}: only what decides whether a rank can start here, in about the time it takes to
 * start a JVM and CUDA, for a container's entry point or a batch script to run before it starts the ranks. In order:
 * <ol>
 * <li>CUDA: the runtime loads, the driver is not older than it, and CUDA sees a GPU ({@link Checks#cuda});</li>
 * <li>NCCL: the library loads ({@link Checks#nccl});</li>
 * <li>{@code /dev/shm}: where CUDA sees more than one GPU, at least {@link Checks#SHM_NEEDED} bytes
 *     ({@link Checks#host});</li>
 * <li>the environment's FAILs ({@link Checks#environment}): {@code NCCL_SOCKET_IFNAME} naming no interface that is
 *     up, a malformed {@code NCCL_*} or {@code NCCL4J_*} value, a {@code MASTER_PORT} that is not a port, a job secret
 *     that is too short or whose file cannot be read;</li>
 * <li>a job across hosts has a job secret ({@link #across}).</li>
 * </ol>
 * The doctor's WARNs (a likely typo, an RDMA device the host lacks, the locked-memory limit, NVLink, PCIe, clocks)
 * do not stop a rank from starting and are left to the full report. The result is one line: {@code ready} with what
 * was found, or {@code not ready} with the first failure and its fix.
 */
final class Preflight {
    /** The start of the line. */
    static final String PREFIX = "nccl4j-doctor --preflight: ";

    private Preflight() {
    }

    /**
     * The verdict.
     *
     * @param failures what stops a rank from starting here, in the order checked; empty when ready
     * @param found what was found, in words, for the ready line
     */
    record Verdict(List<Finding> failures, String found) {
        /**
         * Whether a rank can start here.
         *
         * @return true when nothing failed
         */
        boolean ready() {
            return failures.isEmpty();
        }

        /**
         * The one line: {@code nccl4j-doctor --preflight: ready: <found>}, or {@code ... not ready: <the first
         * failure>; fix: <its fix>}, with the count of the others.
         *
         * @return the line, without a line break
         */
        String line() {
            if (ready()) {
                return PREFIX + "ready: " + found;
            }
            Finding f = failures.get(0);
            int more = failures.size() - 1;
            return oneLine(PREFIX + "not ready: " + f.detail() + "; fix: " + f.fix() + (more == 0 ? ""
                    : " (and " + more + " more: nccl4j-doctor --quick lists them)"));
        }
    }

    /**
     * Judges a machine.
     *
     * @param m what was read of CUDA and the network interfaces
     * @param limits {@code /dev/shm} and the locked-memory limit
     * @param nccl the doctor's NCCL findings ({@link Checks#nccl})
     * @param env the environment
     * @return the verdict
     */
    static Verdict check(Machine m, Limits limits, List<Finding> nccl, Map<String, String> env) {
        List<Finding> failures = new ArrayList<>();
        List<String> found = new ArrayList<>();
        for (Finding f : Checks.cuda(m)) {
            if (f.status() == Status.FAIL) {
                failures.add(f);
            } else if (f.section().equals("cuda")) {
                found.add(m.gpus().size() + " GPU(s), " + f.detail());
            }
        }
        for (Finding f : nccl) {
            if (f.status() == Status.FAIL) {
                failures.add(f);
            } else if (f.status() == Status.OK) {
                found.add("NCCL " + f.detail());
            }
        }
        for (Finding f : Checks.host(limits, m, env)) {
            if (f.subject().equals("/dev/shm")) {
                if (f.status() == Status.OK) {
                    found.add("/dev/shm " + f.detail());
                } else {
                    failures.add(Finding.fail(f.section(), f.subject(), f.detail(), f.fix()));
                }
            }
        }
        for (Finding f : Checks.environment(env, m)) {
            if (f.status() == Status.FAIL) {
                failures.add(f);
            }
        }
        String ifname = env.get(NcclEnvironment.SOCKET_IFNAME);
        if (ifname != null && !ifname.isBlank()) {
            found.add(NcclEnvironment.SOCKET_IFNAME + "=" + ifname.trim());
        }
        String across = across(env);
        if (across != null) {
            JobSecret secret;
            try {
                secret = JobSecret.from(env);
            } catch (IllegalArgumentException x) {
                secret = null;   // the environment's FAIL above names it
            }
            if (secret != null) {
                found.add("a job secret (" + across + ")");
            } else if (failures.stream().noneMatch(f -> f.subject().equals(JobSecret.VARIABLE))) {
                failures.add(Finding.fail("env", JobSecret.VARIABLE, across + ", and no job secret is set: anything "
                        + "that reaches rank 0's ports can join the rendezvous and the liveness channel", "export "
                        + "NCCL4J_JOB_SECRET=$(openssl rand -hex 32) once and give every rank the same value (a "
                        + "Kubernetes Secret through secretKeyRef or as NCCL4J_JOB_SECRET_FILE; mpirun -x "
                        + "NCCL4J_JOB_SECRET); docs/launching.md, \"The job secret\""));
            }
        }
        return new Verdict(List.copyOf(failures), String.join(", ", found));
    }

    /**
     * Why the environment describes a job whose ports other hosts reach, or null. The rendezvous address
     * ({@code MASTER_ADDR}, else {@code PET_MASTER_ADDR}) decides when it is set: rank 0's ports listen on it, so any
     * address but the loopback's is reached from other hosts (a pod or a node agent has it before its ranks' own
     * variables exist). Without one, a launch over several hosts ({@link Checks#hostsOf}: Slurm's node count, or
     * fewer local ranks than ranks).
     *
     * @param env the environment
     * @return e.g. {@code rank 0 at MASTER_ADDR=node0 (not this host's loopback)} or {@code a job over 2 hosts}, or
     *         null
     */
    static String across(Map<String, String> env) {
        for (String v : new String[] {"MASTER_ADDR", "PET_MASTER_ADDR"}) {
            String addr = env.get(v);
            if (addr != null && !addr.isBlank()) {
                return loopback(addr) ? null : "rank 0 at " + v + "=" + addr.trim() + " (not this host's loopback)";
            }
        }
        String hosts = Checks.hostsOf(env);
        return hosts == null ? null : "a job over " + hosts;
    }

    /**
     * Whether a host names the loopback: {@code localhost}, {@code 127.x.y.z}, {@code ::1}.
     *
     * @param host a host name or address
     * @return true for the loopback
     */
    static boolean loopback(String host) {
        String h = host.trim().toLowerCase(Locale.ROOT);
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        return h.equals("localhost") || h.equals("::1") || h.matches("127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}");
    }

    private static String oneLine(String s) {
        return s.replaceAll("\\s*[\\r\\n]+\\s*", " ");
    }
}
