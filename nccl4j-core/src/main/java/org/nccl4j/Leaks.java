package org.nccl4j;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tracks native resources (device buffers, communicators, streams, events) that are open, and reports those
 * that become unreachable without being closed: what, how big, where it was allocated. Leaked resources are
 * reported, not freed: a device allocation or communicator cannot be safely released from the cleaner
 * thread (wrong device context, communicator still in use by peers).
 */
final class Leaks {
    private static final Logger LOG = LoggerFactory.getLogger(Leaks.class);
    private static final Cleaner CLEANER = Cleaner.create();
    private static final Set<Token> OPEN = ConcurrentHashMap.newKeySet();

    private Leaks() {
    }

    /** One tracked resource; {@link #closed()} must be called when the owner closes it. */
    static final class Token implements Runnable {
        private final String what;
        private final Throwable allocatedAt;
        private volatile boolean closed;
        private Cleaner.Cleanable cleanable;

        private Token(String what) {
            this.what = what;
            this.allocatedAt = new Throwable("allocated here");
        }

        void closed() {
            closed = true;
            OPEN.remove(this);
            Cleaner.Cleanable c = cleanable;
            if (c != null) {
                c.clean();
            }
        }

        @Override
        public void run() {
            if (!closed) {
                OPEN.remove(this);
                LOG.warn("nccl4j: {} was never closed and is now unreachable; its native resources are leaked "
                        + "(close it, or use try-with-resources)", what, allocatedAt);
            }
        }

        @Override
        public String toString() {
            return what;
        }
    }

    /** Starts tracking {@code owner}, described by {@code what}. */
    static Token track(Object owner, String what) {
        Token t = new Token(what);
        OPEN.add(t);
        t.cleanable = CLEANER.register(owner, t);
        return t;
    }

    /** Descriptions of every tracked resource still open, with where each was allocated. */
    static List<String> open() {
        List<String> out = new ArrayList<>();
        for (Token t : OPEN) {
            StackTraceElement[] st = t.allocatedAt.getStackTrace();
            String where = "";
            for (StackTraceElement e : st) {
                if (!e.getClassName().startsWith("org.nccl4j.") || e.getClassName().contains("Test")) {
                    where = " at " + e;
                    break;
                }
            }
            out.add(t.what + where);
        }
        return out;
    }
}
