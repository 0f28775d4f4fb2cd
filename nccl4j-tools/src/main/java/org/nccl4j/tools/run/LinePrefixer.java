package org.nccl4j.tools.run;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Copies one rank's stdout or stderr to the launcher's, line by line, each line prefixed with {@code [r] }.
 * Bytes are copied as they are (no charset decoding); a whole line is written and flushed under the lock of
 * the target stream, so lines of different ranks never mix. A last line without a newline gets one; a line
 * longer than {@link #MAX_LINE} bytes is cut into several prefixed lines.
 */
final class LinePrefixer implements Runnable {
    /** The longest line written in one piece. */
    static final int MAX_LINE = 64 * 1024;

    private final InputStream in;
    private final OutputStream out;
    private final byte[] prefix;

    /**
     * @param in the rank's stream
     * @param out the launcher's stream; every writer must synchronize on it
     * @param rank the rank, for the prefix
     */
    LinePrefixer(InputStream in, OutputStream out, int rank) {
        this.in = in;
        this.out = out;
        this.prefix = ("[" + rank + "] ").getBytes(StandardCharsets.US_ASCII);
    }

    @Override
    public void run() {
        byte[] chunk = new byte[8192];
        byte[] line = new byte[256];
        int len = 0;
        try (InputStream stream = in) {
            int n;
            while ((n = stream.read(chunk)) > 0) {
                for (int i = 0; i < n; i++) {
                    if (len == line.length) {
                        if (len >= MAX_LINE) {
                            emit(line, len);
                            len = 0;
                        } else {
                            line = java.util.Arrays.copyOf(line, Math.min(MAX_LINE, 2 * len));
                        }
                    }
                    line[len++] = chunk[i];
                    if (chunk[i] == '\n') {
                        emit(line, len - 1);
                        len = 0;
                    }
                }
            }
        } catch (IOException e) {
            // the rank's pipe broke: it was killed, or the launcher is stopping; keep what was read
        }
        if (len > 0) {
            emit(line, len);
        }
    }

    private void emit(byte[] line, int len) {
        synchronized (out) {
            try {
                out.write(prefix);
                out.write(line, 0, len);
                out.write('\n');
                out.flush();
            } catch (IOException e) {
                // the launcher's own output is gone (closed pipe); nothing left to tell
            }
        }
    }
}
