package org.nccl4j.tools.perf;

import org.nccl4j.diagnostics.StepStats;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Option;
import picocli.CommandLine.Command;
import org.nccl4j.tools.cli.Tools;
import org.nccl4j.tools.cli.JsonDocs;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.XYStyler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Bus bandwidth against size as a PNG, drawn with XChart: sizes on a log2 axis labelled in bytes (8, 1K, 1M,
 * 1G), one line per series. Runs headless ({@code java.awt.headless} is set when not given).
 *
 * <p>As a program it draws one or more nccl4j-perf (or nccl_perf_baseline) JSON files, one line per operation,
 * placement and file:
 * <pre>
 * Plot out.png [--title TEXT] [--placement out-of-place|in-place|both] [LABEL=]results.json ...
 * Plot out.png --frontier [--y busbw|time] [--title TEXT] frontier.tsv
 * </pre>
 */
public final class Plot {
    private Plot() {
    }

    /**
     * One line of the chart.
     *
     * @param name the legend text
     * @param sizes sizes in bytes, increasing, all above 0
     * @param y the value at each size: bus bandwidth in GB/s, or a time in us ({@link #writeTimes})
     */
    public record Series(String name, double[] sizes, double[] y) {
    }

    /**
     * The series of a run: one per operation and placement (out-of-place, in-place), sizes above 0 only.
     *
     * @param results the measurements
     * @param prefix put before each name (e.g. a run's label), or ""
     * @param placements which placements to draw: "out-of-place", "in-place", or both
     * @return the series
     */
    public static List<Series> seriesOf(List<PerfRow> results, String prefix, List<String> placements) {
        Map<String, List<PerfRow>> by = new LinkedHashMap<>();
        for (PerfRow r : results) {
            if (r.size() <= 0 || !placements.contains(r.placement())) {
                continue;
            }
            String key = prefix + r.operation().perfName() + (placements.size() > 1 ? " " + r.placement() : "")
                    + (r.type().equals("float") ? "" : " " + r.type())
                    + (r.redop().equals("none") || r.redop().equals("sum") ? "" : " " + r.redop());
            by.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
        }
        List<Series> out = new ArrayList<>();
        for (Map.Entry<String, List<PerfRow>> e : by.entrySet()) {
            // keep the first measurement of each size (several roots give several)
            Map<Long, PerfRow> bySize = new LinkedHashMap<>();
            for (PerfRow r : e.getValue()) {
                bySize.putIfAbsent(r.size(), r);
            }
            double[] x = new double[bySize.size()];
            double[] y = new double[bySize.size()];
            int i = 0;
            for (PerfRow r : bySize.values()) {
                x[i] = r.size();
                y[i++] = r.busbw();
            }
            out.add(new Series(e.getKey(), x, y));
        }
        return out;
    }

    /**
     * Writes the chart as a PNG.
     *
     * @param file the PNG to write
     * @param title the chart's title
     * @param series the lines
     * @throws IOException when the file cannot be written
     */
    public static void write(Path file, String title, List<Series> series) throws IOException {
        draw(file, title, "bus bandwidth (GB/s)", Styler.LegendPosition.InsideNW, series);
    }

    /**
     * Writes the chart of times per operation as a PNG: as {@link #write}, the y axis in microseconds.
     *
     * @param file the PNG to write
     * @param title the chart's title
     * @param series the lines, their values in us
     * @throws IOException when the file cannot be written
     */
    public static void writeTimes(Path file, String title, List<Series> series) throws IOException {
        // bandwidth rises to the right and leaves the top left free; times can be anywhere: their legend goes beside
        draw(file, title, "time per operation (us)", Styler.LegendPosition.OutsideE, series);
    }

    private static void draw(Path file, String title, String yTitle, Styler.LegendPosition legend, List<Series> series)
            throws IOException {
        if (System.getProperty("java.awt.headless") == null) {
            System.setProperty("java.awt.headless", "true");
        }
        XYChart chart = new XYChartBuilder().width(1000).height(600).title(title)
                .xAxisTitle("size (bytes, log2 scale)").yAxisTitle(yTitle).build();
        XYStyler st = chart.getStyler();
        st.setLegendPosition(legend);
        st.setxAxisTickLabelsFormattingFunction(Plot::bytesLabel);
        st.setXAxisDecimalPattern("0");
        st.setChartBackgroundColor(java.awt.Color.WHITE);
        st.setAntiAlias(true);
        if (series.isEmpty()) {
            chart.addSeries("no data", new double[] {0, 1}, new double[] {0, 0});
        }
        for (Series s : series) {
            double[] x = new double[s.sizes().length];
            for (int i = 0; i < x.length; i++) {
                x[i] = Math.log(s.sizes()[i]) / Math.log(2);
            }
            XYSeries xy = chart.addSeries(s.name(), x, s.y());
            xy.setMarker(SeriesMarkers.CIRCLE);
        }
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        try (OutputStream out = Files.newOutputStream(file)) {
            BitmapEncoder.saveBitmap(chart, out, BitmapEncoder.BitmapFormat.PNG);
        }
    }

    /** A log2 axis position as a byte size: 3 becomes "8", 10 "1K", 20 "1M", 23 "8M", 30 "1G". */
    static String bytesLabel(Double log2) {
        double v = Math.pow(2, log2);
        String[] units = {"", "K", "M", "G", "T"};
        int u = 0;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return (Math.abs(v - Math.rint(v)) < 1e-9 ? String.valueOf((long) Math.rint(v))
                : String.format(Locale.ROOT, "%.1f", v)) + units[u];
    }

    /**
     * Reads results from a JSON file written by nccl4j-perf -J or nccl_perf_baseline -J.
     *
     * @param file the JSON file
     * @return its measurements
     * @throws IOException when it cannot be read
     */
    @SuppressWarnings("unchecked")
    public static List<PerfRow> readResults(Path file) throws IOException {
        Map<String, Object> doc = (Map<String, Object>) JsonDocs.read(Files.readString(file));
        List<PerfRow> out = new ArrayList<>();
        for (Object o : (List<Object>) doc.getOrDefault("results", List.of())) {
            Map<String, Object> r = (Map<String, Object>) o;
            Operation op = Operation.byName((String) r.get("op"));
            if (op == null) {
                continue;
            }
            Object wrong = r.get("wrong");
            out.add(new PerfRow(op, num(r, "size").longValue(), num(r, "count").longValue(), (String) r.get("type"),
                    (String) r.get("redop"), num(r, "root").intValue(), "in-place".equals(r.get("placement")),
                    num(r, "time_us"), num(r, "algbw"), num(r, "busbw"),
                    wrong == null ? -1 : ((Double) wrong).longValue(),
                    r.get("alloc_bytes") instanceof Double ? (Double) r.get("alloc_bytes") : Double.NaN, null));
        }
        return out;
    }

    /**
     * The lines of a frontier run ({@code scripts/bench/frontier.sh}'s frontier.tsv: lib, np, reg, case, round, side,
     * size, time_us, busbw, in_place_time_us, in_place_busbw, tab-separated, a header first; a file from before the
     * two in-place columns has the first nine): one per library, rank count, -R, case and side, named "nccl-tests" or
     * "nccl4j" and "-R n", with the library, the ranks and the case's operation added where the file has more than
     * one of them; the value at each size is the median over the rounds of the out-of-place figure.
     *
     * @param tsv the file's lines
     * @param times true for the times (us), false for the bus bandwidths (GB/s)
     * @return the series, in the order the file first names them
     * @throws IllegalArgumentException when the header is not frontier.tsv's or a row is malformed (its line named)
     */
    public static List<Series> frontierSeries(List<String> tsv, boolean times) {
        String header = "lib\tnp\treg\tcase\tround\tside\tsize\ttime_us\tbusbw\tin_place_time_us\tin_place_busbw";
        String before = header.substring(0, header.indexOf("\tin_place"));
        if (tsv.isEmpty() || !tsv.get(0).equals(header) && !tsv.get(0).equals(before)) {
            throw new IllegalArgumentException("not a frontier.tsv (scripts/bench/frontier.sh): the first line must be "
                    + "the header " + header.replace("\t", " ") + " (or its first 9 names)");
        }
        int fields = tsv.get(0).split("\t").length;
        Map<List<String>, Map<Long, List<Double>>> by = new LinkedHashMap<>();
        java.util.Set<String> libs = new java.util.TreeSet<>();
        java.util.Set<String> nps = new java.util.TreeSet<>();
        java.util.Set<String> cases = new java.util.TreeSet<>();
        for (int i = 1; i < tsv.size(); i++) {
            String line = tsv.get(i);
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            long size;
            double value;
            try {
                if (f.length != fields) {
                    throw new NumberFormatException(f.length + " fields, not " + fields);
                }
                size = Long.parseLong(f[6]);
                value = Double.parseDouble(times ? f[7] : f[8]);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("frontier.tsv line " + (i + 1) + " is not a row of frontier.sh ("
                        + e.getMessage() + "): " + line);
            }
            String op = f[3].split(" ", 2)[0].replace("_perf", "");
            libs.add(f[0]);
            nps.add(f[1]);
            cases.add(op);
            by.computeIfAbsent(List.of(f[0], f[1], f[2], op, f[5]), k -> new java.util.TreeMap<>())
                    .computeIfAbsent(size, k -> new ArrayList<>()).add(value);
        }
        List<Series> out = new ArrayList<>();
        for (Map.Entry<List<String>, Map<Long, List<Double>>> e : by.entrySet()) {
            List<String> k = e.getKey();
            String name = ("c".equals(k.get(4)) ? "nccl-tests" : "nccl4j") + " -R " + k.get(2)
                    + (cases.size() > 1 ? " " + k.get(3) : "") + (libs.size() > 1 ? " " + k.get(0) : "")
                    + (nps.size() > 1 ? " " + k.get(1) + " GPUs" : "");
            double[] x = new double[e.getValue().size()];
            double[] y = new double[x.length];
            int i = 0;
            for (Map.Entry<Long, List<Double>> v : e.getValue().entrySet()) {
                x[i] = v.getKey();
                y[i++] = StepStats.median(v.getValue().stream().mapToDouble(Double::doubleValue).toArray());
            }
            out.add(new Series(name, x, y));
        }
        return out;
    }

    private static Double num(Map<String, Object> r, String key) {
        Object v = r.get(key);
        return v instanceof Double ? (Double) v : Double.NaN;
    }

    /**
     * Draws JSON result files: {@code Plot out.png [--title T] [--placement P] [LABEL=]file.json ...}.
     *
     * @param args see the class documentation
     * @throws IOException when a file cannot be read or written
     */
    public static void main(String[] args) throws IOException {
        Options o = Tools.parseOrExit(new Options(), args);
        if (o.frontier) {
            try {
                frontier(o);
            } catch (IllegalArgumentException | java.nio.file.NoSuchFileException e) {
                System.err.println("Plot: " + (e instanceof java.nio.file.NoSuchFileException ? "no such file: " : "")
                        + e.getMessage());
                System.exit(Tools.USAGE);
            }
            return;
        }
        List<String> placements = o.placement.equals("both") ? List.of("out-of-place", "in-place")
                : List.of(o.placement);
        List<Series> all = new ArrayList<>();
        for (String spec : o.files) {
            int eq = spec.indexOf('=');
            String label = eq > 0 ? spec.substring(0, eq) + ": " : "";
            Path f = Path.of(eq > 0 ? spec.substring(eq + 1) : spec);
            all.addAll(seriesOf(readResults(f), label, placements));
        }
        write(o.png, o.title, all);
        System.out.println("wrote " + o.png);
    }

    /** --frontier: the one frontier.tsv's chart. */
    private static void frontier(Options o) throws IOException {
        if (o.files.size() != 1) {
            throw new IllegalArgumentException("--frontier draws one frontier.tsv, got " + o.files.size() + " files: "
                    + o.files);
        }
        List<Series> series = frontierSeries(Files.readAllLines(Path.of(o.files.get(0))), o.y == YAxis.time);
        if (o.y == YAxis.time) {
            writeTimes(o.png, o.title, series);
        } else {
            write(o.png, o.title, series);
        }
        System.out.println("wrote " + o.png);
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "Plot", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            description = "Draws bus bandwidth against size from result files of nccl4j-perf -J or the C baseline.")
    static final class Options {
        @Parameters(index = "0", paramLabel = "OUT.png", description = "The PNG to write.")
        Path png;
        @Parameters(index = "1..*", arity = "1..*", paramLabel = "[LABEL=]RESULTS.json", description = "Result files, "
                + "each with an optional label.")
        List<String> files = new ArrayList<>();
        @Option(names = "--title", paramLabel = "TEXT", description = "The title (default: ${DEFAULT-VALUE}).")
        String title = "Bus bandwidth";
        @Option(names = "--placement", paramLabel = "out-of-place|in-place|both", description = "Which runs to draw "
                + "(default: ${DEFAULT-VALUE}).")
        String placement = "out-of-place";
        @Option(names = "--frontier", description = "The one file is scripts/bench/frontier.sh's frontier.tsv: a line "
                + "per side (nccl-tests, nccl4j), -R, operation, library and rank count, medians over the rounds "
                + "(out of place).")
        boolean frontier;
        @Option(names = "--y", paramLabel = "busbw|time", description = "With --frontier: what the y axis shows "
                + "(default: ${DEFAULT-VALUE}).")
        YAxis y = YAxis.busbw;
    }

    /** What a frontier chart's y axis shows. */
    enum YAxis {
        /** Bus bandwidth (GB/s). */
        busbw,
        /** Time per operation (us). */
        time
    }
}
