package org.nccl4j.examples;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The figures of the documentation against their one source, docs/gpu-runs/benchmark-latest.json, and the JSON's
 * figures against the reports its {@code sources} object names. For {@link DocsTest}; every check returns its
 * problems, one line each, naming the place, the figure and the fix.
 *
 * <p>How a figure is read from a table row: the first cell (the measure) holds the conditions (sizes, counts,
 * machines), so only its times ({@code compute 5.70 ms}) are figures; in every other cell each number is one, but a
 * message size (a power of two in KiB, MiB or GiB, or from 8 in B: {@code 8 B}, {@code 64 MiB}; the benchmarks'
 * smallest message is 8 B) and a count ({@code 4 x H100})
 * name a condition. A figure's unit is the one printed after it ({@code us}, {@code ms}, {@code ns}, {@code GB/s},
 * {@code GiB}, {@code B}; a range {@code 5.972-6.016 ms} is two figures in ms); a signed number without one
 * ({@code +0.09}) is a difference in the unit of the figure before it in the cell; an unsigned number without one is
 * a ratio. In the lines around a table, a date must be one of the JSON's dates, {@code NCCL x.y.z} its NCCL version
 * and a bare whole number a count of repeats. A figure agrees when a key of its unit (the key's name has the unit as
 * one of its {@code _}-separated parts: {@code us}, {@code ms}, {@code ns}, {@code gbps}, {@code gib}, {@code bytes},
 * {@code ratio}, {@code repeats}) holds a value that rounds to the figure at the decimals printed.
 */
final class Figures {
    /** A number, a range's second end, and the unit or the {@code x} of a count printed after them. */
    private static final Pattern NUMBER = Pattern.compile("(?<![\\w.])([+-]?)(\\d+(?:\\.\\d+)?)"
            + "(?:-(\\d+(?:\\.\\d+)?))?(?!\\w|\\.\\d)(?:\\s*(us|ms|ns|GB/s|GiB|MiB|KiB|B|x)(?![\\w/]))?");
    private static final Pattern DATE = Pattern.compile("\\b\\d{4}-\\d{2}-\\d{2}\\b");
    private static final Pattern NCCL_VERSION = Pattern.compile("\\bNCCL (\\d+\\.\\d+\\.\\d+)\\b");
    /** Inline code and link targets: paths and file names, no figures. */
    private static final Pattern NOT_PROSE = Pattern.compile("`[^`]*`|\\]\\([^)]*\\)");
    private static final Map<String, String> FAMILY = Map.of("us", "us", "ms", "ms", "ns", "ns", "GB/s", "gbps",
            "GiB", "gib", "MiB", "mib", "KiB", "kib", "B", "bytes");
    private static final List<String> SIZE_UNITS = List.of("B", "KiB", "MiB", "GiB");
    private static final List<String> TIME_UNITS = List.of("us", "ms", "ns");

    private Figures() {
    }

    /** One figure as printed: its value, the unit family of the keys it may come from, and its text. */
    record Figure(BigDecimal value, String family, String text) {
    }

    /** benchmark-latest.json as a map, in the file's order: numbers as BigDecimal, exactly as written. */
    static Map<String, Object> readJson(String json) throws IOException {
        try (JsonParser p = new JsonFactory().createParser(json)) {
            p.nextToken();
            Object doc = value(p);
            if (!(doc instanceof Map<?, ?>)) {
                throw new IllegalArgumentException("benchmark-latest.json: an object expected, not " + doc);
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> map = (Map<String, Object>) doc;
            return map;
        }
    }

    private static Object value(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        switch (t) {
            case START_OBJECT -> {
                Map<String, Object> m = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    p.nextToken();
                    m.put(name, value(p));
                }
                return m;
            }
            case START_ARRAY -> {
                List<Object> l = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    l.add(value(p));
                }
                return l;
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
                return new BigDecimal(p.getText());
            }
            case VALUE_STRING -> {
                return p.getText();
            }
            case VALUE_TRUE, VALUE_FALSE -> {
                return p.getBooleanValue();
            }
            case VALUE_NULL -> {
                return null;
            }
            default -> throw new IllegalArgumentException("unexpected JSON token " + t);
        }
    }

    /** The figures of one table cell; measure: the row's first cell, where only times are figures. */
    static List<Figure> cellFigures(String cell, boolean measure) {
        List<Figure> out = new ArrayList<>();
        String text = NOT_PROSE.matcher(cell).replaceAll(" ").replace("*", "");
        Matcher m = NUMBER.matcher(text);
        String previous = null;
        while (m.find()) {
            String sign = m.group(1);
            String unit = m.group(4);
            if ("x".equals(unit) || (measure && (unit == null || !TIME_UNITS.contains(unit)))) {
                continue;   // a count, or a condition of the measure
            }
            if (unit != null && SIZE_UNITS.contains(unit) && m.group(3) == null && isPowerOfTwo(m.group(2))
                    && !(unit.equals("B") && m.group(2).length() == 1 && m.group(2).compareTo("8") < 0)) {
                continue;   // a message size
            }
            String family;
            if (unit != null) {
                family = FAMILY.get(unit);
            } else if (!sign.isEmpty()) {
                family = previous;
                if (family == null) {
                    throw new IllegalArgumentException("'" + m.group() + "' in '" + cell.trim() + "': a signed number "
                            + "needs a unit, printed after it or on a figure before it in the cell");
                }
            } else {
                family = "ratio";
            }
            out.add(new Figure(new BigDecimal(sign.equals("-") ? "-" + m.group(2) : m.group(2)), family,
                    m.group().trim()));
            if (m.group(3) != null) {
                out.add(new Figure(new BigDecimal(m.group(3)), family, m.group().trim()));
            }
            previous = family;
        }
        return out;
    }

    private static boolean isPowerOfTwo(String number) {
        if (number.contains(".")) {
            return false;
        }
        long n = Long.parseLong(number);
        return n > 0 && (n & (n - 1)) == 0;
    }

    /**
     * The problems of one markdown table (its header and separator rows are skipped): every figure must be a value
     * of benchmark-latest.json, rounded as printed. where names the document and section in each problem.
     */
    static List<String> checkTable(String where, List<String> rows, Map<String, Object> json) {
        List<String> problems = new ArrayList<>();
        for (String row : rows) {
            String[] cells = row.trim().replaceAll("^\\||\\|$", "").split("\\|", -1);
            for (int c = 0; c < cells.length; c++) {
                for (Figure f : cellFigures(cells[c], c == 0)) {
                    check(where + ", row '" + cells[0].trim() + "'", f, json, problems);
                }
            }
        }
        return problems;
    }

    /**
     * The problems of lines of prose around a table: dates, the NCCL version, repeat counts and figures with units
     * must be the JSON's.
     */
    static List<String> checkProse(String where, List<String> lines, Map<String, Object> json) {
        List<String> problems = new ArrayList<>();
        for (String line : lines) {
            String text = NOT_PROSE.matcher(line).replaceAll(" ");
            Matcher d = DATE.matcher(text);
            while (d.find()) {
                if (json.entrySet().stream().noneMatch(e -> (e.getKey().equals("date") || e.getKey().endsWith("_date"))
                        && d.group().equals(e.getValue()))) {
                    problems.add(where + ": the date " + d.group() + " is none of benchmark-latest.json's dates");
                }
            }
            text = DATE.matcher(text).replaceAll(" ");
            Matcher v = NCCL_VERSION.matcher(text);
            while (v.find()) {
                if (!v.group(1).equals(json.get("nccl_version"))) {
                    problems.add(where + ": NCCL " + v.group(1) + " is not benchmark-latest.json's nccl_version "
                            + json.get("nccl_version"));
                }
            }
            text = NCCL_VERSION.matcher(text).replaceAll(" ");
            for (Figure f : cellFigures(text, false)) {
                boolean count = f.family().equals("ratio") && f.value().scale() == 0 && f.value().signum() >= 0;
                check(where + ", line '" + line.trim() + "'", count ? new Figure(f.value(), "repeats", f.text()) : f,
                        json, problems);
            }
        }
        return problems;
    }

    private static void check(String where, Figure f, Map<String, Object> json, List<String> problems) {
        String closest = null;
        BigDecimal distance = null;
        for (Map.Entry<String, Object> e : json.entrySet()) {
            if (!(e.getValue() instanceof BigDecimal value)
                    || !Arrays.asList(e.getKey().split("_")).contains(f.family())) {
                continue;
            }
            if (rounds(value, f.value())) {
                return;
            }
            BigDecimal d = value.subtract(f.value()).abs();
            if (distance == null || d.compareTo(distance) < 0) {
                distance = d;
                closest = e.getKey() + " = " + value.toPlainString();
            }
        }
        problems.add(where + ": " + f.text() + " is no value of benchmark-latest.json's '" + f.family() + "' keys "
                + "rounded to " + decimals(f.value()) + (closest == null ? " (it has none)"
                : " (closest: " + closest + ")") + "; print the JSON's value, or add the figure to the JSON with "
                + "the report it comes from");
    }

    private static String decimals(BigDecimal printed) {
        int n = Math.max(0, printed.scale());
        return n + (n == 1 ? " decimal" : " decimals");
    }

    /** Whether value, rounded to printed's decimals, is printed: |value - printed| at most half its last digit. */
    static boolean rounds(BigDecimal value, BigDecimal printed) {
        BigDecimal half = BigDecimal.ONE.movePointLeft(Math.max(0, printed.scale())).divide(BigDecimal.valueOf(2));
        return value.subtract(printed).abs().compareTo(half) <= 0;
    }

    /**
     * Whether a report shows value as it prints figures: some number in it is value rounded to that number's
     * decimals, with at least one decimal and two significant digits (fewer where value has fewer) unless value is
     * whole, so that 734.9 stands for 734.873 and 0.090 for 0.0896, but 735 or 0.9 do not.
     */
    static boolean reportShows(String report, BigDecimal value) {
        boolean whole = value.stripTrailingZeros().scale() <= 0;
        int needed = Math.min(2, significant(value.toPlainString()));
        Matcher m = Pattern.compile("(?<![\\w.])(\\d+(?:\\.\\d+)?)(?!\\w|\\.\\d)").matcher(report);
        while (m.find()) {
            BigDecimal printed = new BigDecimal(m.group(1));
            if (rounds(value, printed) && (whole
                    || (printed.scale() >= 1 && significant(m.group(1)) >= needed))) {
                return true;
            }
        }
        return false;
    }

    private static int significant(String number) {
        String digits = number.replace("-", "").replace(".", "").replaceFirst("^0+", "");
        return digits.length();
    }
}
