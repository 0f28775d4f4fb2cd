package org.nccl4j.control;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.nccl4j.trace.TraceOperation;

/**
 * What one rank has issued on one communicator, in the terms every rank shares: its collectives (send and receive
 * are left out: they legitimately differ from rank to rank), numbered 1, 2, 3, ... ("collective #n"), with a running
 * fingerprint of their shapes (operation, count, data type, reduction operator, root). Ranks that issued the same
 * collectives have the same fingerprint at the same number; the liveness channel compares them ({@link Agreement})
 * and tells departing ranks' numbers ({@link Departures}), so that a rank that diverged or left is named at once.
 *
 * <p>The last {@value #CAPACITY} collectives are kept in primitive rings: each one's fingerprint, shape and the
 * flight recorder's sequence number of it (to tell whether it has completed). One thread writes (the one issuing the
 * communicator's operations, as for the flight recorder); the liveness and watchdog threads read. A reader takes an
 * entry only when its stamp names the collective before and after the read. {@link #issued} allocates nothing: a
 * hash and seven array stores.
 */
public final class Ledger {
    /** How many collectives the rings hold. */
    static final int CAPACITY = 4096;
    private static final int MASK = CAPACITY - 1;
    private static final VarHandle LAST;
    private static final VarHandle STAMPS = MethodHandles.arrayElementVarHandle(long[].class);

    static {
        try {
            LAST = MethodHandles.lookup().findVarHandle(Ledger.class, "last", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long[] stamps = new long[CAPACITY];
    private final long[] fingerprints = new long[CAPACITY];
    private final long[] counts = new long[CAPACITY];
    private final long[] traced = new long[CAPACITY];
    private final byte[] operations = new byte[CAPACITY];
    private final byte[] types = new byte[CAPACITY];
    private final int[] reduceOps = new int[CAPACITY];
    private final int[] roots = new int[CAPACITY];
    /** The running fingerprint through the last collective; the writer's own. */
    private long fingerprint = 0x6e63636c346aL;
    /** The number of the last collective issued (release store after its entry is written). */
    @SuppressWarnings("unused")
    private volatile long last;
    /** The thread that issued the last operation (any kind), for the stacks in a dump. */
    private volatile Thread issuer;

    /**
     * A collective was enqueued (not a send or receive).
     *
     * @param operation its {@link TraceOperation#code()}
     * @param count the element count NCCL was given
     * @param type the {@code ncclDataType_t}
     * @param reduceOp the {@code ncclRedOp_t}, or -1
     * @param root the root of a rooted collective, or -1
     * @param traceSeq the flight recorder's sequence number of it, or 0 when not recorded
     */
    public void issued(int operation, long count, int type, int reduceOp, int root, long traceSeq) {
        long n = (long) LAST.getOpaque(this) + 1;
        int slot = (int) (n & MASK);
        long fp = mix(fingerprint, operation, count, type, reduceOp, root);
        fingerprint = fp;
        STAMPS.setOpaque(stamps, slot, -n);
        fingerprints[slot] = fp;
        counts[slot] = count;
        traced[slot] = traceSeq;
        operations[slot] = (byte) operation;
        types[slot] = (byte) type;
        reduceOps[slot] = reduceOp;
        roots[slot] = root;
        STAMPS.setRelease(stamps, slot, n);
        LAST.setRelease(this, n);
        sawIssuer();
    }

    /** Any operation (a send or receive too): remembers the issuing thread when it changed. */
    public void sawIssuer() {
        Thread t = Thread.currentThread();
        if (t != issuer) {
            issuer = t;
        }
    }

    /** @return the thread that issued the last operation, or null */
    public Thread issuer() {
        return issuer;
    }

    /** @return the number of the last collective issued, 0 before the first */
    public long last() {
        return (long) LAST.getAcquire(this);
    }

    /** One step of the running fingerprint: every rank computes the same from the same shapes. */
    static long mix(long fp, int operation, long count, int type, int reduceOp, int root) {
        long h = fp * 0x9E3779B97F4A7C15L;
        h ^= operation * 0xC2B2AE3D27D4EB4FL;
        h = Long.rotateLeft(h, 29) ^ count * 0x165667B19E3779F9L;
        h = Long.rotateLeft(h, 31) ^ ((long) type << 40 | (reduceOp & 0xffffL) << 20 | (root & 0xfffffL));
        return h * 0xFF51AFD7ED558CCDL ^ h >>> 33;
    }

    /** The shape of collective #n, as the wire and the messages carry it. */
    record Shape(long number, int operation, long count, int type, int reduceOp, int root) {
        /** {@code op:count:type:redop:root}, the wire form. */
        String wire() {
            return operation + ":" + count + ":" + type + ":" + reduceOp + ":" + root;
        }

        static Shape parse(long number, String s) {
            String[] f = s.split(":");
            if (f.length != 5) {
                throw new IllegalArgumentException("shape " + s);
            }
            return new Shape(number, Integer.parseInt(f[0]), Long.parseLong(f[1]), Integer.parseInt(f[2]),
                    Integer.parseInt(f[3]), Integer.parseInt(f[4]));
        }

        /** {@code allReduce}: the operation's name. */
        String name() {
            return operationName(operation);
        }
    }

    static String operationName(int code) {
        return code >= 0 && code < TraceOperation.values().length ? TraceOperation.fromCode(code).name()
                : "operation";
    }

    /**
     * The running fingerprint through collective #n.
     *
     * @param n the collective's number
     * @return the fingerprint, or null when the ring no longer holds it (or n is not issued)
     */
    public Long fingerprintAt(long n) {
        if (n == 0) {
            return 0x6e63636c346aL;
        }
        int slot = (int) (n & MASK);
        if ((long) STAMPS.getAcquire(stamps, slot) != n) {
            return null;
        }
        long fp = fingerprints[slot];
        return (long) STAMPS.getAcquire(stamps, slot) == n ? fp : null;
    }

    /** The shape of collective #n, or null when the ring no longer holds it. */
    Shape shape(long n) {
        int slot = (int) (n & MASK);
        if (n <= 0 || (long) STAMPS.getAcquire(stamps, slot) != n) {
            return null;
        }
        Shape s = new Shape(n, operations[slot], counts[slot], types[slot], reduceOps[slot], roots[slot]);
        return (long) STAMPS.getAcquire(stamps, slot) == n ? s : null;
    }

    /** The flight recorder's sequence number of collective #n: 0 when unknown (not recorded, or out of the ring). */
    long traceSeq(long n) {
        int slot = (int) (n & MASK);
        if (n <= 0 || (long) STAMPS.getAcquire(stamps, slot) != n) {
            return 0;
        }
        long t = traced[slot];
        return (long) STAMPS.getAcquire(stamps, slot) == n ? t : 0;
    }

    /**
     * Collective #n as messages name it.
     *
     * @param n the collective's number
     * @return {@code allReduce #3}, or {@code none} before the first collective
     */
    public String describe(long n) {
        if (n <= 0) {
            return "none";
        }
        Shape s = shape(n);
        return (s == null ? "collective" : s.name()) + " #" + n;
    }
}
