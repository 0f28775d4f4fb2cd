package org.nccl4j.trace;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A dump's JSON, written and read with Jackson's streaming API (jackson-core: {@link JsonGenerator},
 * {@link JsonParser}). Reading builds a plain tree (maps, lists, strings, numbers, booleans, null), then takes each
 * field from it with a check that names the field when it is missing or wrong. Fields this version does not know
 * are ignored.
 */
final class TraceJson {
    /** Strict: a duplicate field is an error, not a silent overwrite. */
    static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private TraceJson() {
    }

    // ------------------------------------------------------------------ writing

    static void write(TraceDump d, OutputStream out) throws IOException {
        try (JsonGenerator g = FACTORY.createGenerator(out, JsonEncoding.UTF8)) {
            g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeStringField("format", TraceDump.FORMAT);
            g.writeNumberField("version", TraceDump.VERSION);
            g.writeStringField("host", d.host());
            g.writeNumberField("pid", d.pid());
            g.writeNumberField("rank", d.rank());
            g.writeNumberField("size", d.size());
            g.writeStringField("communicator", d.communicator());
            g.writeStringField("ncclVersion", d.ncclVersion());
            g.writeStringField("dumpedAt", d.dumpedAt().toString());
            g.writeStringField("reason", d.reason());
            g.writeStringField("failure", d.failure());
            g.writeNumberField("capacity", d.capacity());
            g.writeNumberField("lastEnqueued", d.lastEnqueued());
            g.writeNumberField("lastCompleted", d.lastCompleted());
            g.writeObjectFieldStart("environment");
            for (Map.Entry<String, String> v : d.environment().entrySet()) {
                g.writeStringField(v.getKey(), v.getValue());
            }
            g.writeEndObject();
            g.writeArrayFieldStart("entries");
            for (TraceEntry e : d.entries()) {
                g.writeStartObject();
                e.writeIdentity(g);
                g.writeNumberField("bytes", e.bytes());
                g.writeStringField("stream", e.streamHex());
                g.writeStringField("enqueuedAt", e.enqueuedAt().toString());
                g.writeStringField("state", e.state().name());
                g.writeFieldName("completedAfterMicros");
                if (e.completedAfterMicros() == null) {
                    g.writeNull();
                } else {
                    g.writeNumber(e.completedAfterMicros());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeArrayFieldStart("threads");
            for (TraceDump.ThreadStack t : d.threads()) {
                g.writeStartObject();
                g.writeStringField("name", t.name());
                g.writeNumberField("id", t.id());
                g.writeStringField("state", t.state());
                g.writeArrayFieldStart("frames");
                for (String f : t.frames()) {
                    g.writeString(f);
                }
                g.writeEndArray();
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
            g.writeRaw('\n');
        }
    }

    // ------------------------------------------------------------------ reading

    static TraceDump read(InputStream in, String source) throws TraceFormatException {
        Object tree;
        try (JsonParser p = FACTORY.createParser(in)) {
            JsonToken first = p.nextToken();
            if (first == null) {
                throw new TraceFormatException(source, null, "empty file: no JSON in it", null);
            }
            tree = value(p);
            if (p.nextToken() != null) {
                throw new TraceFormatException(source, null, "not valid JSON: more after the top-level value, "
                        + at(p.currentLocation()), null);
            }
        } catch (JsonProcessingException e) {
            throw new TraceFormatException(source, null, "not valid JSON: " + e.getOriginalMessage() + " ("
                    + at(e.getLocation()) + ")", e);
        } catch (TraceFormatException e) {
            throw e;
        } catch (IOException e) {
            throw new TraceFormatException(source, null, "cannot be read: " + e, e);
        }
        if (!(tree instanceof Map)) {
            throw new TraceFormatException(source, null, "expected a JSON object at the top, found "
                    + describe(tree), null);
        }
        return dump(new Obj(source, "", cast(tree)));
    }

    private static String at(JsonLocation l) {
        return l == null ? "at an unknown place" : "at line " + l.getLineNr() + ", column " + l.getColumnNr();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> cast(Object o) {
        return (Map<String, Object>) o;
    }

    /** The value at the parser's current token, as a plain tree. */
    private static Object value(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        switch (t) {
            case START_OBJECT: {
                Map<String, Object> m = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    p.nextToken();
                    m.put(name, value(p));
                }
                return m;
            }
            case START_ARRAY: {
                List<Object> l = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    l.add(value(p));
                }
                return l;
            }
            case VALUE_STRING:
                return p.getText();
            case VALUE_NUMBER_INT:
                return p.getBigIntegerValue();
            case VALUE_NUMBER_FLOAT:
                return p.getDecimalValue();
            case VALUE_TRUE:
                return Boolean.TRUE;
            case VALUE_FALSE:
                return Boolean.FALSE;
            case VALUE_NULL:
                return null;
            default:
                throw new IllegalStateException("unexpected JSON token " + t);
        }
    }

    /** How a value is named in a message: {@code a string ("12")}, {@code the number 1.5}, {@code null}. */
    static String describe(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String s) {
            return "a string (\"" + (s.length() > 60 ? s.substring(0, 60) + "..." : s) + "\")";
        }
        if (v instanceof BigInteger || v instanceof BigDecimal) {
            return "the number " + v;
        }
        if (v instanceof Boolean) {
            return v.toString();
        }
        return v instanceof Map ? "an object" : "an array";
    }

    /** One JSON object of a dump, with the path to it for messages. */
    private static final class Obj {
        final String source;
        final String path;
        final Map<String, Object> map;

        Obj(String source, String path, Map<String, Object> map) {
            this.source = source;
            this.path = path;
            this.map = map;
        }

        String field(String name) {
            return path.isEmpty() ? name : path + "." + name;
        }

        TraceFormatException wrong(String name, String problem) {
            return new TraceFormatException(source, field(name), problem, null);
        }

        Object required(String name) throws TraceFormatException {
            if (!map.containsKey(name)) {
                throw wrong(name, "missing field");
            }
            return map.get(name);
        }

        String string(String name) throws TraceFormatException {
            Object v = required(name);
            if (!(v instanceof String)) {
                throw wrong(name, "expected a string, found " + describe(v));
            }
            return (String) v;
        }

        /** A string or null; absent reads as null. */
        String optionalString(String name) throws TraceFormatException {
            Object v = map.get(name);
            if (v != null && !(v instanceof String)) {
                throw wrong(name, "expected a string or null, found " + describe(v));
            }
            return (String) v;
        }

        long number(String name, long min, long max) throws TraceFormatException {
            return number(name, required(name), min, max);
        }

        /** A whole number or null; absent reads as null. */
        Long optionalNumber(String name, long min, long max) throws TraceFormatException {
            Object v = map.get(name);
            return v == null ? null : number(name, v, min, max);
        }

        private long number(String name, Object v, long min, long max) throws TraceFormatException {
            String range = max == Long.MAX_VALUE ? " >= " + min : " from " + min + " to " + max;
            if (!(v instanceof BigInteger)) {
                throw wrong(name, "expected a whole number" + range + ", found " + describe(v));
            }
            BigInteger n = (BigInteger) v;
            if (n.compareTo(BigInteger.valueOf(min)) < 0 || n.compareTo(BigInteger.valueOf(max)) > 0) {
                throw wrong(name, "expected a whole number" + range + ", found " + n);
            }
            return n.longValue();
        }

        Instant instant(String name) throws TraceFormatException {
            String s = string(name);
            try {
                return Instant.parse(s);
            } catch (DateTimeParseException e) {
                throw wrong(name, "expected an ISO-8601 instant such as \"2025-01-31T12:00:00.123456Z\", found \"" + s
                        + "\"");
            }
        }

        Obj object(String name) throws TraceFormatException {
            Object v = required(name);
            if (!(v instanceof Map)) {
                throw wrong(name, "expected an object, found " + describe(v));
            }
            return new Obj(source, field(name), cast(v));
        }

        List<?> array(String name) throws TraceFormatException {
            Object v = required(name);
            if (!(v instanceof List)) {
                throw wrong(name, "expected an array, found " + describe(v));
            }
            return (List<?>) v;
        }
    }

    private static TraceDump dump(Obj o) throws TraceFormatException {
        Object format = o.map.get("format");
        if (!TraceDump.FORMAT.equals(format)) {
            throw o.wrong("format", (format == null && !o.map.containsKey("format") ? "missing field"
                    : "expected \"" + TraceDump.FORMAT + "\", found " + describe(format))
                    + " (not an nccl4j trace dump)");
        }
        long version = o.number("version", 1, Integer.MAX_VALUE);
        if (version != TraceDump.VERSION) {
            throw o.wrong("version", "version " + version + " is not supported: this reader reads version "
                    + TraceDump.VERSION + " (written by a newer nccl4j?)");
        }
        String host = o.string("host");
        long pid = o.number("pid", 0, Long.MAX_VALUE);
        int size = (int) o.number("size", 1, Integer.MAX_VALUE);
        int rank = (int) o.number("rank", 0, size - 1L);
        String communicator = o.optionalString("communicator");
        String ncclVersion = o.string("ncclVersion");
        Instant dumpedAt = o.instant("dumpedAt");
        String reason = o.string("reason");
        String failure = o.optionalString("failure");
        int capacity = (int) o.number("capacity", FlightRecorder.MIN_CAPACITY, FlightRecorder.MAX_CAPACITY);
        long lastEnqueued = o.number("lastEnqueued", 0, Long.MAX_VALUE >> 2);
        long lastCompleted = o.number("lastCompleted", 0, lastEnqueued);
        Obj envObj = o.object("environment");
        Map<String, String> env = new TreeMap<>();
        for (String name : envObj.map.keySet()) {
            env.put(name, envObj.string(name));
        }
        List<?> list = o.array("entries");
        if (list.size() > capacity) {
            throw o.wrong("entries", "holds " + list.size() + " entries, more than the capacity " + capacity);
        }
        List<TraceEntry> entries = new ArrayList<>(list.size());
        long previous = 0;
        for (int i = 0; i < list.size(); i++) {
            Object v = list.get(i);
            String path = "entries[" + i + "]";
            if (!(v instanceof Map)) {
                throw new TraceFormatException(o.source, path, "expected an object, found " + describe(v), null);
            }
            TraceEntry e = entry(new Obj(o.source, path, cast(v)), previous, lastEnqueued);
            entries.add(e);
            previous = e.sequence();
        }
        List<TraceDump.ThreadStack> threads = new ArrayList<>();
        if (o.map.get("threads") != null) {    // absent (or null) in the dumps written before it existed
            List<?> stacks = o.array("threads");
            for (int i = 0; i < stacks.size(); i++) {
                Object v = stacks.get(i);
                String path = "threads[" + i + "]";
                if (!(v instanceof Map)) {
                    throw new TraceFormatException(o.source, path, "expected an object, found " + describe(v), null);
                }
                threads.add(thread(new Obj(o.source, path, cast(v))));
            }
        }
        try {
            return new TraceDump(host, pid, rank, size, communicator, ncclVersion, dumpedAt, reason, failure, capacity,
                    env, lastEnqueued, lastCompleted, entries, threads);
        } catch (IllegalArgumentException e) {
            throw new TraceFormatException(o.source, null, e.getMessage(), e);
        }
    }

    private static TraceDump.ThreadStack thread(Obj o) throws TraceFormatException {
        String name = o.string("name");
        long id = o.number("id", 0, Long.MAX_VALUE);
        String state = o.string("state");
        if (!TraceDump.ThreadStack.isState(state)) {
            throw o.wrong("state", "unknown thread state \"" + state + "\" (one of " + List.of(Thread.State.values())
                    + ")");
        }
        List<?> list = o.array("frames");
        List<String> frames = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            Object f = list.get(i);
            if (!(f instanceof String)) {
                throw o.wrong("frames[" + i + "]", "expected a string, found " + describe(f));
            }
            frames.add((String) f);
        }
        return new TraceDump.ThreadStack(name, id, state, frames);
    }

    private static TraceEntry entry(Obj o, long previous, long lastEnqueued) throws TraceFormatException {
        long seq = o.number("seq", 1, Long.MAX_VALUE >> 2);
        if (seq <= previous) {
            throw o.wrong("seq", seq + " does not follow the previous entry's " + previous
                    + " (entries go in increasing sequence order)");
        }
        if (seq > lastEnqueued) {
            throw o.wrong("seq", seq + " is beyond lastEnqueued (" + lastEnqueued + ")");
        }
        String opName = o.string("operation");
        TraceOperation op = TraceOperation.byName(opName);
        if (op == null) {
            throw o.wrong("operation", "unknown operation \"" + opName + "\" (one of "
                    + List.of(TraceOperation.values()) + ")");
        }
        long count = o.number("count", 0, Long.MAX_VALUE);
        String dataType = o.optionalString("dataType");
        if (dataType != null && !TraceNames.isDataType(dataType)) {
            throw o.wrong("dataType", "unknown data type \"" + dataType + "\" (one of " + TraceNames.DATA_TYPES
                    + ", or null)");
        }
        String reduceOp = o.optionalString("reduceOp");
        if (reduceOp != null && !TraceNames.isReduceOp(reduceOp)) {
            throw o.wrong("reduceOp", "unknown reduction operator \"" + reduceOp + "\" (one of "
                    + TraceNames.REDUCE_OPS + ", ncclPreMulSum(N) with N >= 5, or null)");
        }
        Long peer = o.optionalNumber("peer", 0, Integer.MAX_VALUE);
        long bytes = o.number("bytes", 0, Long.MAX_VALUE);
        String streamText = o.string("stream");
        long stream;
        try {
            if (!streamText.startsWith("0x") || streamText.length() < 3 || streamText.length() > 18) {
                throw new NumberFormatException();
            }
            stream = Long.parseUnsignedLong(streamText.substring(2), 16);
        } catch (NumberFormatException e) {
            throw o.wrong("stream", "expected a handle in hexadecimal such as \"0x7f3a2c000b40\", found \""
                    + streamText + "\"");
        }
        Instant enqueuedAt = o.instant("enqueuedAt");
        String stateName = o.string("state");
        TraceEntry.State state;
        try {
            state = TraceEntry.State.valueOf(stateName);
        } catch (IllegalArgumentException e) {
            throw o.wrong("state", "unknown state \"" + stateName + "\" (one of "
                    + List.of(TraceEntry.State.values()) + ")");
        }
        Long after = o.optionalNumber("completedAfterMicros", 0, Long.MAX_VALUE);
        if (after != null && state == TraceEntry.State.ENQUEUED) {
            throw o.wrong("completedAfterMicros", "must be null for an operation still ENQUEUED, found " + after);
        }
        return new TraceEntry(seq, op, count, dataType, reduceOp, peer == null ? null : peer.intValue(), bytes,
                stream, enqueuedAt, state, after);
    }
}
