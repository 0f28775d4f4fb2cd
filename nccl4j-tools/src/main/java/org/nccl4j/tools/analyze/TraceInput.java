package org.nccl4j.tools.analyze;

import java.nio.file.Path;
import java.util.Objects;
import org.nccl4j.trace.TraceDump;

/**
 * One dump the analyzer read, with the file it came from (for messages and the report).
 *
 * @param file the dump's file, as given or found in a directory given
 * @param dump what {@link TraceDump#read(Path)} read from it
 */
public record TraceInput(Path file, TraceDump dump) {
    /**
     * Checks the components.
     *
     * @param file see the record's description
     * @param dump see the record's description
     * @throws NullPointerException when either is null
     */
    public TraceInput {
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(dump, "dump");
    }
}
