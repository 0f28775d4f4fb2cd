package org.nccl4j.tools.doctor;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.nccl4j.Nccl;
import org.nccl4j.tools.cli.Tools;
import org.nccl4j.tools.doctor.Finding.Status;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.trace.TraceDump;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code scripts/nccl4j-doctor}: looks at this machine the way one would before a training run and says, line by
 * line, OK, WARN or FAIL, with the fix for each WARN and FAIL: CUDA and its GPUs, the NCCL library, NVLink and the
 * GPU topology, PCIe links, clocks, ECC and other processes (NVML), the NCCL_* and NCCL4J_* environment, and measured
 * copy and all-reduce bandwidths against what the links should carry ({@link Expectations}).
 *
 * <p>Exit status: 0 nothing to fix, 1 a WARN or FAIL, 2 it cannot run (no driver or GPU; a usage error), 3 the
 * doctor failed. {@code --json} prints one JSON object (format version {@value #FORMAT_VERSION}, described in
 * docs/diagnostics.md and docs/formats.md): the findings, a bandwidth finding with its measured and expected rates,
 * and each GPU pair's path ({@link Paths}); {@code --quick} skips the measurements. {@code --preflight} runs only
 * what decides whether a rank can start here ({@link Preflight}) and prints one line; its exit status is 0 ready,
 * 1 not ready.
 */
@Command(name = "nccl4j-doctor", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
        sortOptions = false, usageHelpWidth = 100,
        description = {"Checks this machine for what slows or breaks NCCL training: CUDA and the GPUs, the NCCL "
                + "library, NVLink, topology, PCIe, clocks, ECC, other processes, the NCCL_* and NCCL4J_* "
                + "environment, and measured bandwidths. Each line says OK, WARN or FAIL, with the fix.", ""},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {"0:nothing to fix (--preflight: ready)", "1:a WARN or FAIL was found (--preflight: not "
                + "ready)", "2:it cannot run (no driver or GPU), or a usage error", "3:the doctor failed"})
public final class Doctor implements Callable<Integer> {
    /** The version of the {@code --json} format. */
    public static final int FORMAT_VERSION = 1;

    @Option(names = "--json", description = "Print one JSON object instead of the text report.")
    private boolean json;

    @Option(names = "--quick", description = "Skip the bandwidth measurements (a second instead of up to 30).")
    private boolean quick;

    @Option(names = "--preflight", description = "Only what decides whether a rank can start here (CUDA sees a GPU, "
            + "NCCL loads, /dev/shm is large enough, the environment's FAILs such as NCCL_SOCKET_IFNAME naming no "
            + "interface, a job secret for a job across hosts), in one line: exit 0 ready, 1 not ready.")
    private boolean preflight;

    @Spec
    private CommandSpec spec;

    /** Picocli makes it. */
    public Doctor() {
    }

    /**
     * Runs the doctor and exits with its status.
     *
     * @param args the command line
     */
    public static void main(String[] args) {
        Tools.main(new Doctor(), args);
    }

    @Override
    public Integer call() {
        if (preflight) {
            if (json || quick) {
                throw new Tools.UsageException("--preflight prints one line and measures nothing: use it alone, or "
                        + "--quick or --json without it");
            }
            Preflight.Verdict v = Preflight.check(Probe.read(false), Limits.read(), ncclFindings(), System.getenv());
            PrintWriter out = spec.commandLine().getOut();
            out.println(v.line());
            out.flush();
            return v.ready() ? 0 : 1;
        }
        long t0 = System.nanoTime();
        Machine machine = Probe.read(true);
        List<Finding> findings = examine(machine, System.getenv(), !quick);
        int status = machine.cudaError() != null ? 2 : Checks.worst(findings).compareTo(Status.WARN) >= 0 ? 1 : 0;
        double seconds = (System.nanoTime() - t0) / 1e9;
        PrintWriter out = spec.commandLine().getOut();
        List<Paths.Path> paths = machine.cudaError() == null ? Paths.all(machine) : List.of();
        out.print(json ? json(findings, status, seconds, paths) : text(findings, status, seconds));
        out.flush();
        return status;
    }

    /** Every check on {@code machine} and {@code env}; the measurements when asked and CUDA works. */
    static List<Finding> examine(Machine machine, Map<String, String> env, boolean measure) {
        List<Finding> findings = new ArrayList<>(Checks.cuda(machine));
        List<Finding> nccl = ncclFindings();
        findings.addAll(nccl);
        if (machine.cudaError() == null) {
            findings.addAll(Checks.nvml(machine));
        }
        findings.addAll(Checks.host(Limits.read(), machine, env));
        findings.addAll(Checks.environment(env, machine));
        boolean ncclLoaded = nccl.stream().noneMatch(f -> f.status() == Status.FAIL);
        if (measure && machine.cudaError() == null && !machine.gpus().isEmpty() && ncclLoaded) {
            try {
                findings.addAll(Measure.run(machine));
            } catch (RuntimeException e) {
                findings.add(Finding.fail("bandwidth", "measurement", "failed: " + e.getMessage(), "run the "
                        + "doctor again with --quick, and see the message for the cause"));
            }
        }
        return findings;
    }

    /** The NCCL library nccl4j loads here: its version and path and the entry points it lacks, or why it fails. */
    static List<Finding> ncclFindings() {
        String error = null;
        String version = null;
        String path = null;
        List<NcclFunction> missing = new ArrayList<>();
        try {
            NcclLibrary lib = Nccl.library();
            version = lib.version();
            path = lib.path();
            for (NcclFunction f : NcclFunction.values()) {
                if (!lib.has(f)) {
                    missing.add(f);
                }
            }
        } catch (RuntimeException | LinkageError e) {
            error = "no NCCL library could be loaded: " + e.getMessage();
        }
        return Checks.nccl(version, path, missing, error);
    }

    static String text(List<Finding> findings, int status, double seconds) {
        StringWriter sw = new StringWriter();
        PrintWriter p = new PrintWriter(sw);
        p.println("nccl4j-doctor (nccl4j " + Tools.nccl4jVersion() + ") on " + org.nccl4j.trace.TraceDump.localHost());
        for (Finding f : findings) {
            p.printf(Locale.ROOT, "%-5s %-9s %s: %s%n", f.status(), f.section(), f.subject(), f.detail());
            if (!f.fix().isEmpty()) {
                p.printf(Locale.ROOT, "%-15s fix: %s%n", "", f.fix());
            }
        }
        Map<Status, Integer> counts = counts(findings);
        p.printf(Locale.ROOT, "%d OK, %d WARN, %d FAIL, %d INFO in %.1f s: %s%n", counts.get(Status.OK),
                counts.get(Status.WARN), counts.get(Status.FAIL), counts.get(Status.INFO), seconds,
                status == 0 ? "nothing to fix" : status == 2 ? "cannot run here (exit 2)" : "see WARN and FAIL above "
                        + "(exit 1)");
        p.flush();
        return sw.toString();
    }

    static String json(List<Finding> findings, int status, double seconds, List<Paths.Path> paths) {
        StringWriter sw = new StringWriter();
        try (JsonGenerator g = new JsonFactory().createGenerator(sw)) {
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeStringField(org.nccl4j.tools.cli.JsonDocs.FORMAT, "nccl4j-doctor");
            g.writeNumberField(org.nccl4j.tools.cli.JsonDocs.VERSION, FORMAT_VERSION);
            g.writeStringField("nccl4j", Tools.nccl4jVersion());
            g.writeStringField("host", org.nccl4j.trace.TraceDump.localHost());
            g.writeNumberField("seconds", Math.round(seconds * 10) / 10.0);
            g.writeNumberField("exitStatus", status);
            g.writeObjectFieldStart("summary");
            for (Map.Entry<Status, Integer> e : counts(findings).entrySet()) {
                g.writeNumberField(e.getKey().name(), e.getValue());
            }
            g.writeEndObject();
            g.writeArrayFieldStart("findings");
            for (Finding f : findings) {
                g.writeStartObject();
                g.writeStringField("section", f.section());
                g.writeStringField("status", f.status().name());
                g.writeStringField("subject", f.subject());
                g.writeStringField("detail", f.detail());
                if (!f.fix().isEmpty()) {
                    g.writeStringField("fix", f.fix());
                }
                if (f.measurement() != null) {
                    g.writeStringField("path", f.measurement().path());
                    g.writeNumberField("measuredGBps", round(f.measurement().measuredGBps()));
                    gbps(g, "expectedGBps", f.measurement().expectedGBps());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeArrayFieldStart("paths");
            for (Paths.Path p : paths) {
                g.writeStartObject();
                g.writeNumberField("from", p.from());
                g.writeNumberField("to", p.to());
                g.writeStringField("path", p.word());
                g.writeStringField("kind", p.kind().json());
                g.writeNumberField("links", p.links());
                g.writeNumberField("linksBuilt", p.linksBuilt());
                if (p.nvlinkVersion() > 0) {
                    g.writeNumberField("nvlinkVersion", p.nvlinkVersion());
                } else {
                    g.writeNullField("nvlinkVersion");
                }
                gbps(g, "expectedGBps", p.expectedGBps());
                g.writeBooleanField("judged", p.judged());
                g.writeStringField("description", p.description());
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return sw + System.lineSeparator();
    }

    /** A rate in GB/s to one decimal, or null when there is none (0). */
    private static void gbps(JsonGenerator g, String field, double value) throws IOException {
        if (value > 0) {
            g.writeNumberField(field, round(value));
        } else {
            g.writeNullField(field);
        }
    }

    private static double round(double v) {
        return Math.round(v * 10) / 10.0;
    }

    private static Map<Status, Integer> counts(List<Finding> findings) {
        Map<Status, Integer> c = new EnumMap<>(Status.class);
        for (Status s : Status.values()) {
            c.put(s, 0);
        }
        for (Finding f : findings) {
            c.merge(f.status(), 1, Integer::sum);
        }
        return c;
    }
}
