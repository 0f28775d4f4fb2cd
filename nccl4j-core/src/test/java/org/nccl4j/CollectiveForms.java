package org.nccl4j;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * Every collective of {@link Communicator} in each of its forms (buffer out-of-place, in-place, raw), as data:
 * which arguments it takes, how to make valid ones, and how to call it. Shared by the validation tests.
 *
 * <p>Valid arguments are for rank {@link #RANK} of {@link #SIZE} on device 0, {@link #N} elements of
 * {@link DataType#FLOAT32} per rank, root or peer = {@link #RANK} (so that buffers read or written on the root
 * only are required and checked).
 */
final class CollectiveForms {
    static final int RANK = 1;
    static final int SIZE = 4;
    static final int N = 8;
    static final long SEND_ADDR = FakeCuda.BASE + 0x10_0000L;
    static final long RECV_ADDR = FakeCuda.BASE + 0x20_0000L;

    private CollectiveForms() {
    }

    /** The arguments of one call; each form reads those it takes. */
    static final class Args {
        Communicator comm;
        DeviceBuffer send;
        DeviceBuffer recv;
        DeviceBuffer buffer;
        long sendAddr = SEND_ADDR;
        long recvAddr = RECV_ADDR;
        long count = N;
        DataType type = DataType.FLOAT32;
        ReduceOp op = ReduceOp.SUM;
        int root = RANK;
        Stream stream;

        DeviceBuffer get(String role) {
            switch (role) {
                case "send": return send;
                case "recv": return recv;
                case "buffer": return buffer;
                default: throw new IllegalArgumentException(role);
            }
        }

        void set(String role, DeviceBuffer b) {
            switch (role) {
                case "send": send = b; break;
                case "recv": recv = b; break;
                case "buffer": buffer = b; break;
                default: throw new IllegalArgumentException(role);
            }
        }
    }

    /** Makes buffers of FLOAT32 elements on device 0 (the test's fixture). */
    interface Buffers {
        DeviceBuffer floats(long count);
    }

    interface Call {
        void run(Args a);
    }

    /**
     * One form of one collective.
     *
     * @param name e.g. "allGather(in place)"
     * @param fn the NCCL function it reaches on the full stub
     * @param roles the arguments it takes: send, recv, buffer (DeviceBuffers); sendAddr, recvAddr, bufferAddr,
     *     count (raw); op; root or peer
     * @param fitRole the buffer whose size the operation checks against a count derived from another, or null
     * @param fitNeeded the element count that buffer must hold
     * @param perRankRole the buffer whose length must be a multiple of the ranks, or null
     */
    record Form(String name, String fn, Set<String> roles, BiConsumer<Buffers, Args> setup, Call call,
            String fitRole, long fitNeeded, String perRankRole) {
        boolean takes(String role) {
            return roles.contains(role);
        }

        boolean reduces() {
            return roles.contains("op");
        }

        /** "root" or "peer", or null. */
        String rankRole() {
            return roles.contains("root") ? "root" : roles.contains("peer") ? "peer" : null;
        }

        boolean raw() {
            return roles.contains("count");
        }

        /**
         * The buffer whose size gives the element count: "buffer" in place, otherwise whichever of send and recv
         * is not {@link #fitRole()}; null for raw forms, which take the count.
         */
        String countRole() {
            if (raw()) {
                return null;
            }
            if (takes("buffer")) {
                return "buffer";
            }
            return "send".equals(fitRole) ? "recv" : "send";
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private static final List<Form> FORMS = new ArrayList<>();

    private static void add(String name, String fn, String roles, BiConsumer<Buffers, Args> setup, Call call) {
        add(name, fn, roles, setup, call, null, 0, null);
    }

    private static void add(String name, String fn, String roles, BiConsumer<Buffers, Args> setup, Call call,
            String fitRole, long fitNeeded, String perRankRole) {
        FORMS.add(new Form(name, fn, Set.of(roles.split(" ")), setup, call, fitRole, fitNeeded, perRankRole));
    }

    private static BiConsumer<Buffers, Args> oop(long send, long recv) {
        return (b, a) -> {
            a.send = b.floats(send);
            a.recv = b.floats(recv);
        };
    }

    private static BiConsumer<Buffers, Args> inPlace(long count) {
        return (b, a) -> a.buffer = b.floats(count);
    }

    private static final BiConsumer<Buffers, Args> RAW = (b, a) -> { };

    static {
        long n = N;
        long sn = (long) SIZE * N;
        add("allReduce(send, recv)", "ncclAllReduce", "send recv op", oop(n, n),
                a -> a.comm.allReduce(a.send, a.recv, a.type, a.op, a.stream), "recv", n, null);
        add("allReduce(in place)", "ncclAllReduce", "buffer op", inPlace(n),
                a -> a.comm.allReduce(a.buffer, a.type, a.op, a.stream));
        add("allReduce(raw)", "ncclAllReduce", "sendAddr recvAddr count op", RAW,
                a -> a.comm.allReduce(a.sendAddr, a.recvAddr, a.count, a.type, a.op, a.stream));

        add("broadcast(send, recv)", "ncclBroadcast", "send recv root", oop(n, n),
                a -> a.comm.broadcast(a.send, a.recv, a.type, a.root, a.stream), "send", n, null);
        add("broadcast(in place)", "ncclBroadcast", "buffer root", inPlace(n),
                a -> a.comm.broadcast(a.buffer, a.type, a.root, a.stream));
        add("broadcast(raw)", "ncclBroadcast", "sendAddr recvAddr count root", RAW,
                a -> a.comm.broadcast(a.sendAddr, a.recvAddr, a.count, a.type, a.root, a.stream));

        add("reduce(send, recv)", "ncclReduce", "send recv op root", oop(n, n),
                a -> a.comm.reduce(a.send, a.recv, a.type, a.op, a.root, a.stream), "recv", n, null);
        add("reduce(in place)", "ncclReduce", "buffer op root", inPlace(n),
                a -> a.comm.reduce(a.buffer, a.type, a.op, a.root, a.stream));
        add("reduce(raw)", "ncclReduce", "sendAddr recvAddr count op root", RAW,
                a -> a.comm.reduce(a.sendAddr, a.recvAddr, a.count, a.type, a.op, a.root, a.stream));

        add("allGather(send, recv)", "ncclAllGather", "send recv", oop(n, sn),
                a -> a.comm.allGather(a.send, a.recv, a.type, a.stream), "recv", sn, null);
        add("allGather(in place)", "ncclAllGather", "buffer", inPlace(sn),
                a -> a.comm.allGather(a.buffer, a.type, a.stream), null, 0, "buffer");
        add("allGather(raw)", "ncclAllGather", "sendAddr recvAddr count", RAW,
                a -> a.comm.allGather(a.sendAddr, a.recvAddr, a.count, a.type, a.stream));

        add("reduceScatter(send, recv)", "ncclReduceScatter", "send recv op", oop(sn, n),
                a -> a.comm.reduceScatter(a.send, a.recv, a.type, a.op, a.stream), "send", sn, null);
        add("reduceScatter(in place)", "ncclReduceScatter", "buffer op", inPlace(sn),
                a -> a.comm.reduceScatter(a.buffer, a.type, a.op, a.stream), null, 0, "buffer");
        add("reduceScatter(raw)", "ncclReduceScatter", "sendAddr recvAddr count op", RAW,
                a -> a.comm.reduceScatter(a.sendAddr, a.recvAddr, a.count, a.type, a.op, a.stream));

        add("alltoAll(send, recv)", "ncclAlltoAll", "send recv", oop(sn, sn),
                a -> a.comm.alltoAll(a.send, a.recv, a.type, a.stream), "recv", sn, "send");
        add("alltoAll(raw)", "ncclAlltoAll", "sendAddr recvAddr count", RAW,
                a -> a.comm.alltoAll(a.sendAddr, a.recvAddr, a.count, a.type, a.stream));

        add("gather(send, recv)", "ncclGather", "send recv root", oop(n, sn),
                a -> a.comm.gather(a.send, a.recv, a.type, a.root, a.stream), "recv", sn, null);
        add("gather(in place)", "ncclGather", "buffer root", inPlace(sn),
                a -> a.comm.gather(a.buffer, a.type, a.root, a.stream), null, 0, "buffer");
        add("gather(raw)", "ncclGather", "sendAddr recvAddr count root", RAW,
                a -> a.comm.gather(a.sendAddr, a.recvAddr, a.count, a.type, a.root, a.stream));

        add("scatter(send, recv)", "ncclScatter", "send recv root", oop(sn, n),
                a -> a.comm.scatter(a.send, a.recv, a.type, a.root, a.stream), "send", sn, null);
        add("scatter(in place)", "ncclScatter", "buffer root", inPlace(sn),
                a -> a.comm.scatter(a.buffer, a.type, a.root, a.stream), null, 0, "buffer");
        add("scatter(raw)", "ncclScatter", "sendAddr recvAddr count root", RAW,
                a -> a.comm.scatter(a.sendAddr, a.recvAddr, a.count, a.type, a.root, a.stream));

        add("send(buffer)", "ncclSend", "buffer peer", inPlace(n),
                a -> a.comm.send(a.buffer, a.type, a.root, a.stream));
        add("send(raw)", "ncclSend", "bufferAddr count peer", RAW,
                a -> a.comm.send(a.sendAddr, a.count, a.type, a.root, a.stream));
        add("recv(buffer)", "ncclRecv", "buffer peer", inPlace(n),
                a -> a.comm.recv(a.buffer, a.type, a.root, a.stream));
        add("recv(raw)", "ncclRecv", "bufferAddr count peer", RAW,
                a -> a.comm.recv(a.sendAddr, a.count, a.type, a.root, a.stream));
    }

    /** Every form of every collective (27). */
    static List<Form> all() {
        return Collections.unmodifiableList(FORMS);
    }
}
