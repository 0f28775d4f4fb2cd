package org.nccl4j.tools.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The JSON documents nccl4j's tools write and read (the benchmark's {@code -J} results, the doctor's and the trace
 * analyzer's {@code --json}), with Jackson: maps, lists, strings, numbers, booleans and null, in the order given.
 * Doubles are written with six significant digits (integral values as integers, NaN and infinities as null), so that
 * result files stay readable and diff well; on reading, every number is a {@link Double}. Each document names its
 * format and version ({@link #FORMAT}, {@link #VERSION}); docs/formats.md describes them.
 */
public final class JsonDocs {
    /** The field naming a document's format, e.g. {@code "nccl4j-perf"}. */
    public static final String FORMAT = "format";
    /** The field holding the format's version, a whole number; a document without it is of version 0. */
    public static final String VERSION = "version";

    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .registerModule(new SimpleModule("nccl4j-numbers")
                    .addSerializer(Double.class, new Rounded())
                    .addSerializer(Float.class, new RoundedFloat()));

    private JsonDocs() {
    }

    /**
     * Writes {@code doc} as indented JSON with a final newline.
     *
     * @param doc a map, list, string, number, boolean or null, nested as deep as needed
     * @return the text
     * @throws IllegalArgumentException for a value JSON cannot hold
     */
    public static String write(Object doc) {
        try {
            return MAPPER.writeValueAsString(doc) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot write as JSON: " + e.getOriginalMessage(), e);
        }
    }

    /**
     * Reads one JSON value: objects become {@link LinkedHashMap}s (in their order), arrays {@link ArrayList}s,
     * numbers {@link Double}s.
     *
     * @param text the JSON
     * @return the value
     * @throws IllegalArgumentException naming the line and column of what is malformed
     */
    public static Object read(String text) {
        try {
            return plain(MAPPER.readTree(text));
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr() + ", column "
                    + e.getLocation().getColumnNr();
            throw new IllegalArgumentException("malformed JSON" + where + ": " + e.getOriginalMessage(), e);
        }
    }

    /**
     * The version of a document that {@link #read} returned: its {@value #VERSION} field, or 0 when it has none
     * (files written before the field existed).
     *
     * @param doc a document
     * @return the version
     */
    public static int versionOf(Map<String, Object> doc) {
        Object v = doc.get(VERSION);
        return v instanceof Double d ? d.intValue() : 0;
    }

    private static Object plain(JsonNode n) {
        if (n == null || n.isNull() || n.isMissingNode()) {
            return null;
        }
        if (n.isObject()) {
            Map<String, Object> m = new LinkedHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext();) {
                Map.Entry<String, JsonNode> e = it.next();
                m.put(e.getKey(), plain(e.getValue()));
            }
            return m;
        }
        if (n.isArray()) {
            List<Object> l = new ArrayList<>(n.size());
            for (JsonNode x : n) {
                l.add(plain(x));
            }
            return l;
        }
        if (n.isNumber()) {
            return n.doubleValue();
        }
        if (n.isBoolean()) {
            return n.booleanValue();
        }
        return n.asText();
    }

    /** Six significant digits; integral values as integers; NaN and infinities as null. */
    private static final class Rounded extends StdSerializer<Double> {
        private static final long serialVersionUID = 1L;

        Rounded() {
            super(Double.class);
        }

        @Override
        public void serialize(Double value, JsonGenerator g, SerializerProvider p) throws IOException {
            number(value, g);
        }
    }

    private static final class RoundedFloat extends StdSerializer<Float> {
        private static final long serialVersionUID = 1L;

        RoundedFloat() {
            super(Float.class);
        }

        @Override
        public void serialize(Float value, JsonGenerator g, SerializerProvider p) throws IOException {
            number(value.doubleValue(), g);
        }
    }

    static void number(double d, JsonGenerator g) throws IOException {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            g.writeNull();
        } else if (d == Math.rint(d) && Math.abs(d) < 1e15) {
            g.writeNumber((long) d);
        } else {
            g.writeNumber(new BigDecimal(String.format(Locale.ROOT, "%.6g", d)).stripTrailingZeros());
        }
    }
}
