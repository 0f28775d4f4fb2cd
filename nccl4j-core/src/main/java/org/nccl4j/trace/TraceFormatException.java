package org.nccl4j.trace;

import java.io.IOException;

/**
 * A trace dump that cannot be read: not JSON, not an nccl4j trace dump, a version this reader does not know, or a
 * field that is missing or of the wrong type or value. The message names the file (or the source given to
 * {@link TraceDump#parse(String, String)}) and the field, e.g.
 * {@code /tmp/nccl4j-trace/nccl4j-trace-rank1-node7-4242.json: field "entries[3].count": expected a whole number
 * >= 0, found a string ("12")}.
 */
public final class TraceFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    /** @serial the file or source that could not be read */
    private final String source;
    /** @serial the field, as a path from the top ({@code "entries[3].count"}), or null for the file as a whole */
    private final String field;
    /** @serial what is wrong, without the source and the field */
    private final String problem;

    TraceFormatException(String source, String field, String problem, Throwable cause) {
        super(source + ": " + (field == null ? "" : "field \"" + field + "\": ") + problem, cause);
        this.source = source;
        this.field = field;
        this.problem = problem;
    }

    /**
     * The file that could not be read.
     *
     * @return the file's path as given to {@link TraceDump#read(java.nio.file.Path)}, or the source name given to
     *         {@link TraceDump#parse(String, String)}
     */
    public String source() {
        return source;
    }

    /**
     * The field that is wrong.
     *
     * @return the field as a path from the top, e.g. {@code "rank"} or {@code "entries[3].count"}; null when the
     *         file as a whole is wrong (not JSON, empty, not an object)
     */
    public String field() {
        return field;
    }

    /**
     * What is wrong.
     *
     * @return the message without the source and the field, e.g. {@code "missing field"}
     */
    public String problem() {
        return problem;
    }
}
