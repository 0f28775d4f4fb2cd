package org.nccl4j.tools.perf;

import java.util.List;
import java.util.Locale;

/**
 * The text report in nccl-tests' column layout: the header block, one line per size with the out-of-place and
 * the in-place measurement side by side, and the closing summary.
 */
public final class Table {
    private Table() {
    }

    /** The format of -S's timestamps, nccl-tests' {@code %Y-%m-%d %H:%M:%S}. */
    static final java.time.format.DateTimeFormatter TIMESTAMP =
            java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss", Locale.ROOT);

    /** @return the three header lines above the results */
    public static List<String> header() {
        return header(false, false);
    }

    /**
     * The header lines, as nccl-tests prints them with {@code -C} and {@code -S}.
     *
     * @param cputime -C: the time columns are "cputime"
     * @param timestamps -S: a "timestamp" column at the end
     * @return the three header lines above the results
     */
    public static List<String> header(boolean cputime, boolean timestamps) {
        String time = cputime ? "cputime" : "time";
        String ts = timestamps ? String.format(Locale.ROOT, " %19s", "timestamp") : "";
        String tsFormat = timestamps ? String.format(Locale.ROOT, " %19s", "%Y-%m-%d %H:%M:%S") : "";
        return List.of(
                String.format(Locale.ROOT, "# %10s  %12s  %8s  %6s  %6s           out-of-place"
                        + "                       in-place          ",
                        "", "", "", "", ""),
                String.format(Locale.ROOT, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s",
                        "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", time, "algbw",
                        "busbw", "#wrong") + ts,
                String.format(Locale.ROOT, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s",
                        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
                        "") + tsFormat);
    }

    /** @return the local date and time as -S prints it */
    static String now() {
        return java.time.LocalDateTime.now().format(TIMESTAMP);
    }

    /**
     * One result line.
     *
     * @param outOfPlace the out-of-place measurement
     * @param inPlace the in-place measurement of the same size
     * @return the line, without a newline
     */
    public static String line(PerfRow outOfPlace, PerfRow inPlace) {
        return line(outOfPlace, inPlace, null);
    }

    /**
     * One result line, ended by a timestamp (-S).
     *
     * @param outOfPlace the out-of-place measurement
     * @param inPlace the in-place measurement of the same size
     * @param timestamp the date and time to print at the end (nccl-tests' {@code %21s}), or null for none
     * @return the line, without a newline
     */
    public static String line(PerfRow outOfPlace, PerfRow inPlace, String timestamp) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%12d  %12d  %8s  %6s  %6d", outOfPlace.size(),
                outOfPlace.count(), outOfPlace.type(), outOfPlace.redop(), outOfPlace.root()));
        body(sb, outOfPlace);
        body(sb, inPlace);
        if (timestamp != null) {
            sb.append(String.format(Locale.ROOT, "%21s", timestamp));
        }
        return sb.toString();
    }

    private static void body(StringBuilder sb, PerfRow r) {
        sb.append("  ").append(number(r.timeUs(), 7)).append("  ").append(number(r.algbw(), 6)).append("  ")
                .append(number(r.busbw(), 6));
        if (r.wrong() < 0) {
            sb.append("    N/A");
        } else {
            sb.append("  ").append(count(r.wrong(), 6));
        }
    }

    /**
     * A number in at most {@code width} characters: two decimals if they fit, else one, else none, else in
     * exponent form (as nccl-tests prints time and bandwidth).
     */
    static String number(double v, int width) {
        for (String f : new String[] {"%" + width + ".2f", "%" + width + ".1f", "%" + width + ".0f"}) {
            String s = String.format(Locale.ROOT, f, v);
            if (s.length() <= width) {
                return s;
            }
        }
        return String.format(Locale.ROOT, width >= 7 ? "%" + width + ".1e" : "%" + width + ".0e", v);
    }

    /** A count as C's {@code %6g} prints a whole number: plain below a million, else in exponent form. */
    static String count(long n, int width) {
        return String.format(Locale.ROOT, "%" + width + "s", g(n));
    }

    /**
     * The closing lines of one operation's table.
     *
     * @param wrong elements found wrong in total
     * @param avgBusbw the mean bus bandwidth over every printed measurement
     * @param operation the operation's name
     * @return the lines
     */
    public static List<String> footer(long wrong, double avgBusbw, String operation) {
        return List.of(
                String.format(Locale.ROOT, "# %-20s : %d %s", "Out of bounds values", Math.max(wrong, 0),
                        wrong > 0 ? "FAILED" : "OK"),
                String.format(Locale.ROOT, "# %-20s : %s ", "Avg bus bandwidth", g(avgBusbw)),
                "#",
                "# Collective test concluded: " + operation);
    }

    /** C's {@code %g}: six significant digits, trailing zeros dropped. */
    static String g(double v) {
        if (v == 0) {
            return "0";
        }
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return Double.toString(v);
        }
        int exp = (int) Math.floor(Math.log10(Math.abs(v)));
        String s;
        if (exp < -4 || exp >= 6) {
            s = String.format(Locale.ROOT, "%.5e", v);
            int e = s.indexOf('e');
            String mant = s.substring(0, e);
            if (mant.contains(".")) {
                mant = mant.replaceAll("0+$", "").replaceAll("\\.$", "");
            }
            return mant + s.substring(e);
        }
        s = String.format(Locale.ROOT, "%." + Math.max(0, 5 - exp) + "f", v);
        if (s.contains(".")) {
            s = s.replaceAll("0+$", "").replaceAll("\\.$", "");
        }
        return s;
    }
}
