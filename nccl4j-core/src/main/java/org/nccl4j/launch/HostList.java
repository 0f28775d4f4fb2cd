package org.nccl4j.launch;

import java.util.ArrayList;
import java.util.List;

/**
 * Slurm's compressed host lists ({@code SLURM_STEP_NODELIST}, {@code SLURM_JOB_NODELIST}), read as
 * {@code scontrol show hostnames} reads them.
 *
 * <p>A list is host expressions separated by commas or white space, e.g. {@code gpu[01-04,07]},
 * {@code gpu01,gpu02}, {@code a[1-2],b[3,5-6]}. An expression is text with bracketed ranges in it: a range is a
 * number or {@code lo-hi}, several are separated by commas inside the brackets. Each number is written at least as
 * wide as the range's low bound, so {@code node-[001-010]} gives {@code node-001} to {@code node-010} and
 * {@code n[8-10]} gives {@code n8}, {@code n9}, {@code n10}. An expression with several brackets, Slurm's form for
 * multi-dimensional names, gives every combination with the first bracket varying slowest:
 * {@code rack[1-2]-gpu[1-4]} is {@code rack1-gpu1} ... {@code rack1-gpu4}, {@code rack2-gpu1} ... {@code rack2-gpu4}.
 * Text after the last bracket is kept as a suffix. Slurm's 3-D box form ({@code bgl[000x133]}) is refused.
 *
 * <p>A malformed list gives an {@link IllegalArgumentException} naming the variable, its value and what is wrong:
 * an empty host name, a bracket left open or closed without one opened, an empty range, a bound that is not a
 * number, a low bound above its high bound.
 */
final class HostList {
    /** The most hosts {@link #expand} gives. */
    static final int MAX_HOSTS = 100_000;
    /** The most digits of a bound: beyond it a host number overflows a long. */
    private static final int MAX_DIGITS = 18;

    /** One range of a bracket: {@code lo} to {@code hi}, each written at least {@code width} digits wide. */
    private record Range(long lo, long hi, int width) {
        long size() {
            return hi - lo + 1;
        }
    }

    /** One host expression: {@code texts.size() == brackets.size() + 1}, text, bracket, text, ..., text. */
    private record Expression(List<String> texts, List<List<Range>> brackets) {
        /** The number of hosts, saturating at {@code Long.MAX_VALUE}. */
        long count() {
            long n = 1;
            for (List<Range> b : brackets) {
                long m = 0;
                for (Range r : b) {
                    m = saturatingAdd(m, r.size());
                }
                n = saturatingMultiply(n, m);
            }
            return n;
        }

        String first() {
            StringBuilder sb = new StringBuilder(texts.get(0));
            for (int i = 0; i < brackets.size(); i++) {
                Range r = brackets.get(i).get(0);
                sb.append(number(r.lo, r.width)).append(texts.get(i + 1));
            }
            return sb.toString();
        }

        void expandInto(List<String> out) {
            expandInto(out, 0, new StringBuilder(texts.get(0)));
        }

        private void expandInto(List<String> out, int bracket, StringBuilder prefix) {
            if (bracket == brackets.size()) {
                out.add(prefix.toString());
                return;
            }
            int mark = prefix.length();
            for (Range r : brackets.get(bracket)) {
                for (long n = r.lo; n <= r.hi; n++) {
                    prefix.setLength(mark);
                    prefix.append(number(n, r.width)).append(texts.get(bracket + 1));
                    expandInto(out, bracket + 1, prefix);
                }
            }
            prefix.setLength(mark);
        }
    }

    private HostList() {
    }

    /**
     * The first host of a list, without expanding it. The whole list is checked.
     *
     * @param variable the variable the list came from, for messages
     * @param value the list
     * @return the first host
     * @throws IllegalArgumentException when the list is malformed or empty
     */
    static String first(String variable, String value) {
        return parse(variable, value).get(0).first();
    }

    /**
     * Every host of a list, in Slurm's order (duplicates kept).
     *
     * @param variable the variable the list came from, for messages
     * @param value the list
     * @return the hosts
     * @throws IllegalArgumentException when the list is malformed or empty, or names more than {@value #MAX_HOSTS}
     *         hosts
     */
    static List<String> expand(String variable, String value) {
        List<Expression> list = parse(variable, value);
        long total = count(list);
        if (total > MAX_HOSTS) {
            throw new IllegalArgumentException(variable + "=\"" + value + "\" names "
                    + (total == Long.MAX_VALUE ? "more than " + Long.MAX_VALUE : Long.toString(total))
                    + " hosts, more than the " + MAX_HOSTS + " a host list may expand to here: check how it is set");
        }
        List<String> hosts = new ArrayList<>((int) total);
        for (Expression e : list) {
            e.expandInto(hosts);
        }
        return hosts;
    }

    /**
     * The number of hosts of a list, without expanding it.
     *
     * @param variable the variable the list came from, for messages
     * @param value the list
     * @return the count, {@code Long.MAX_VALUE} when it is larger than a long
     * @throws IllegalArgumentException when the list is malformed or empty
     */
    static long count(String variable, String value) {
        return count(parse(variable, value));
    }

    private static long count(List<Expression> list) {
        long total = 0;
        for (Expression e : list) {
            total = saturatingAdd(total, e.count());
        }
        return total;
    }

    private static List<Expression> parse(String variable, String value) {
        if (value == null || value.isBlank()) {
            throw bad(variable, value, "it is empty");
        }
        List<Expression> out = new ArrayList<>();
        int n = value.length();
        int i = 0;
        boolean afterComma = true; // at the start, a comma is as bad as after another comma
        while (i < n) {
            char c = value.charAt(i);
            if (Character.isWhitespace(c)) {
                i++;
                continue;
            }
            if (c == ',') {
                if (afterComma) {
                    throw bad(variable, value, "an empty host name before the comma at position " + i);
                }
                afterComma = true;
                i++;
                continue;
            }
            int end = expressionEnd(variable, value, i);
            out.add(expression(variable, value, i, end));
            afterComma = false;
            i = end;
        }
        if (afterComma) {
            throw bad(variable, value, "it ends with a comma, after which a host name is missing");
        }
        return out;
    }

    /** Where the expression starting at {@code start} ends: the first separator outside brackets. */
    private static int expressionEnd(String variable, String value, int start) {
        int open = -1;
        int i = start;
        for (; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '[') {
                if (open >= 0) {
                    throw bad(variable, value, "'[' at position " + i + " inside the bracket opened at position "
                            + open);
                }
                open = i;
            } else if (c == ']') {
                if (open < 0) {
                    throw bad(variable, value, "']' at position " + i + " closes no bracket");
                }
                open = -1;
            } else if (open < 0 && (c == ',' || Character.isWhitespace(c))) {
                break;
            } else if (open >= 0 && Character.isWhitespace(c)) {
                throw bad(variable, value, "white space at position " + i + " inside the bracket opened at position "
                        + open);
            }
        }
        if (open >= 0) {
            throw bad(variable, value, "the bracket opened at position " + open + " is not closed");
        }
        return i;
    }

    private static Expression expression(String variable, String value, int start, int end) {
        List<String> texts = new ArrayList<>();
        List<List<Range>> brackets = new ArrayList<>();
        int i = start;
        while (true) {
            int open = value.indexOf('[', i);
            if (open < 0 || open >= end) {
                texts.add(value.substring(i, end));
                break;
            }
            texts.add(value.substring(i, open));
            int close = value.indexOf(']', open);
            brackets.add(ranges(variable, value, open + 1, close));
            i = close + 1;
        }
        return new Expression(texts, brackets);
    }

    private static List<Range> ranges(String variable, String value, int start, int end) {
        if (start == end) {
            throw bad(variable, value, "the brackets at position " + (start - 1) + " are empty");
        }
        List<Range> out = new ArrayList<>();
        int i = start;
        while (i <= end) {
            int comma = value.indexOf(',', i);
            int stop = comma < 0 || comma > end ? end : comma;
            out.add(range(variable, value, i, stop));
            i = stop + 1;
        }
        return out;
    }

    private static Range range(String variable, String value, int start, int end) {
        String r = value.substring(start, end);
        if (r.isEmpty()) {
            throw bad(variable, value, "an empty range at position " + start);
        }
        if (r.indexOf('x') >= 0) {
            throw bad(variable, value, "\"" + r + "\" at position " + start + " is Slurm's 3-D box form, which is not"
                    + " read here");
        }
        int dash = r.indexOf('-');
        String lo = dash < 0 ? r : r.substring(0, dash);
        String hi = dash < 0 ? r : r.substring(dash + 1);
        long l = bound(variable, value, lo, start);
        long h = bound(variable, value, hi, start + dash + 1);
        if (l > h) {
            throw bad(variable, value, "the range \"" + r + "\" at position " + start + " runs down: its low bound is"
                    + " above its high bound");
        }
        return new Range(l, h, lo.length());
    }

    private static long bound(String variable, String value, String digits, int at) {
        if (digits.isEmpty()) {
            throw bad(variable, value, "a range bound is missing at position " + at);
        }
        for (int k = 0; k < digits.length(); k++) {
            if (digits.charAt(k) < '0' || digits.charAt(k) > '9') {
                throw bad(variable, value, "\"" + digits + "\" at position " + at + " is not a number (ranges are"
                        + " digits, lo-hi, separated by commas)");
            }
        }
        if (digits.length() > MAX_DIGITS) {
            throw bad(variable, value, "\"" + digits + "\" at position " + at + " has more than " + MAX_DIGITS
                    + " digits");
        }
        return Long.parseLong(digits);
    }

    private static String number(long n, int width) {
        String s = Long.toString(n);
        if (s.length() >= width) {
            return s;
        }
        return "0".repeat(width - s.length()) + s;
    }

    private static long saturatingAdd(long a, long b) {
        long s = a + b;
        return s < 0 ? Long.MAX_VALUE : s;
    }

    private static long saturatingMultiply(long a, long b) {
        return a != 0 && b > Long.MAX_VALUE / a ? Long.MAX_VALUE : a * b;
    }

    private static IllegalArgumentException bad(String variable, String value, String what) {
        return new IllegalArgumentException(variable + "=\"" + value + "\" is not a Slurm host list: " + what);
    }
}
