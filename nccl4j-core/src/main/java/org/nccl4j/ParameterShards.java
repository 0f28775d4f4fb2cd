package org.nccl4j;

import java.util.ArrayList;
import java.util.List;

/**
 * Fully sharded data parallelism (ZeRO-3, PyTorch's FSDP): each rank holds only its shard of every parameter
 * group's parameters, gradients and (in the caller's buffers, laid out like these) optimizer state; a group's full
 * parameters are all-gathered ({@code ncclAllGather}) into one of a bounded number of reusable buffers just before
 * they are needed, and its full gradient is reduce-scattered ({@code ncclReduceScatter}) to the owning shards as soon
 * as backward has produced it. Peak memory is then the shards plus a bounded number of gathered groups, so a model
 * larger than one GPU trains on several.
 *
 * <h2>Layout</h2>
 * Groups (layers) are registered in forward order ({@link Builder#add}). Group g of {@code count(g)} elements is
 * padded with zeros to {@link #paddedCount(int)}, a multiple of ranks x {@link Builder#alignment alignment}; rank r
 * owns elements {@code [r S, (r + 1) S)} of it, S = {@link #shardCount(int)}, of which {@link #validCount(int)} are
 * real (the last ranks' shards may be short, or all padding). This rank's shards of all groups lie one after the
 * other in one flat buffer of {@link #shardElements()} elements, group g at {@link #shardOffset(int)}: the
 * parameters in {@link #parameterShards()}, the gradients in {@link #gradientShards()}.
 *
 * <h2>A step</h2>
 * <pre>
 * for g in 0 .. G-1:        W = shards.gather(g, compute)      // full parameters of g; prefetches what follows
 *                           forward of g, reading W
 * loss
 * for g in G-1 .. 0:        W = shards.gather(g, compute)      // backward order
 *                           dW = shards.gradient(g, compute)   // a full-size gradient buffer for g
 *                           write dW (the group's gradient), then shards.reduceScatter(g, compute)
 *                           the rest of backward of g, reading W
 * shards.finish(compute)    // waits for each reduce-scatter; the optimizer hook updates each group's shard
 * </pre>
 * With {@link Builder#overlapOptimizer overlapOptimizer(true)} the hook runs instead inside each
 * {@code reduceScatter(g)}, on the communication stream right behind that group's reduce-scatter, so that the updates
 * overlap the rest of backward too; {@code finish} then only makes the compute stream wait for them.
 * The gathers follow a fixed schedule, forward order then backward order ({@link #scheduledGroup(int)}); each
 * gathered buffer returned by {@link #gather} is valid for work enqueued on the compute stream until the next call of
 * {@code gather}. With B gathered buffers ({@link Builder#gatheredBuffers}, default 2) the gathers of the next B - 1
 * positions of the schedule are issued at once on the communication stream, each after the compute stream's work
 * enqueued before the call that issues it, so they run while the current group computes; a group still held in a
 * buffer is not gathered again (with 2 buffers, the last two groups of forward are reused by backward, as FSDP2 keeps
 * the last layer). With B = groups every group stays gathered through the step: full parameters, the ZeRO-2 form.
 * The full gradient buffers ({@link Builder#gradientBuffers}, default 2) are reused in turn: {@link #gradient} makes
 * the compute stream wait until the buffer's previous reduce-scatter has read it. With as many as groups, every
 * gradient stays whole until its reduce-scatter ends (the ZeRO-1 form's memory).
 *
 * <p>Gradients are averaged over ranks ({@link ReduceOp#AVG}), or summed, or reduced with a {@link ReduceOp.PreMulSum}
 * ({@link Builder#reduceOp}). The calls of a step allocate nothing on the Java heap nor on the device. Not
 * thread-safe: one training thread per instance.
 */
public final class ParameterShards implements AutoCloseable {
    /**
     * The optimizer's hook: updates one group's shard once its reduced gradient shard is there. Called by
     * {@link #finish(Stream)} for each group in the order of their reduce-scatters, after the compute stream was made
     * to wait for that group's reduce-scatter, so that later groups' reduce-scatters overlap earlier groups' updates;
     * or, with {@link Builder#overlapOptimizer overlapOptimizer(true)}, by {@link #reduceScatter(int, Stream)} with the
     * communication stream, right behind the group's reduce-scatter.
     */
    @FunctionalInterface
    public interface ShardUpdate {
        /**
         * Enqueues the update of a group's parameter shard on {@code compute}.
         *
         * @param group the group
         * @param offset the element offset of its shard in the flat shard buffers ({@link #shardOffset(int)}), the
         *     same in the caller's optimizer-state buffers when laid out like {@link #parameterShards()}
         * @param count the elements of its shard, padding included ({@link #shardCount(int)})
         * @param compute the stream to enqueue the update on: the compute stream given to {@code finish}, or the
         *     communication stream when the optimizer overlaps backward
         */
        void update(int group, long offset, long count, Stream compute);
    }

    private final Communicator comm;
    private final DataType type;
    private final ReduceOp op;
    private final Stream commStream;
    private final boolean ownsStream;
    private final ShardUpdate hook;
    /** The hook runs in reduceScatter, on the communication stream. */
    private final boolean overlapOptimizer;
    /** Recorded on the communication stream by an overlapped finish: the end of the step's updates. */
    private final Event updatesDone;
    private final int groups;
    private final long[] counts;
    private final long[] padded;
    private final long[] shardCounts;
    private final long[] shardOffsets;
    private final long shardElements;
    private final DeviceBuffer paramStore;
    private final DeviceBuffer gradStore;
    private final DeviceBuffer[] paramShard;
    private final DeviceBuffer[] gradShard;
    private final DeviceBuffer[] slots;
    private final DeviceBuffer[] gradSlots;
    /** Per schedule position: the view of its slot that holds its group. */
    private final DeviceBuffer[] gatheredView;
    /** Per group: the view of its gradient slot. */
    private final DeviceBuffer[] gradView;
    private final Schedule plan;
    private final int gradientBuffers;
    private final Event[] computeAt;
    private final Event[] gatherStart;
    private final Event[] gatherDone;
    private final Event[] gradWritten;
    private final Event[] reduceStart;
    private final Event[] reduceDone;
    /** The next position of the schedule, 0 .. 2 groups. */
    private int position;
    /** The group whose reduce-scatter comes next, groups - 1 down to -1. */
    private int nextReduce;
    private boolean closed;

    private ParameterShards(Builder b) {
        this.comm = b.comm;
        this.type = b.type;
        this.op = b.op != null ? b.op : b.average ? ReduceOp.AVG : ReduceOp.SUM;
        this.hook = b.hook;
        this.overlapOptimizer = b.overlapOptimizer;
        this.groups = b.counts.size();
        int ranks = comm.size();
        this.counts = new long[groups];
        this.padded = new long[groups];
        this.shardCounts = new long[groups];
        this.shardOffsets = new long[groups];
        long at = 0;
        long widest = 0;
        for (int g = 0; g < groups; g++) {
            counts[g] = b.counts.get(g);
            padded[g] = paddedCount(counts[g], ranks, b.alignment);
            shardCounts[g] = padded[g] / ranks;
            shardOffsets[g] = at;
            at += shardCounts[g];
            widest = Math.max(widest, padded[g]);
        }
        this.shardElements = at;
        int slotCount = b.gathered > 0 ? b.gathered : Math.min(2, groups);
        this.gradientBuffers = b.gradientSlots > 0 ? b.gradientSlots : Math.min(2, groups);
        if (slotCount > groups) {
            throw Errors.argument("gatheredBuffers(" + slotCount + ") exceeds the " + groups + " groups: use at most "
                    + groups + " (every group stays gathered)");
        }
        if (gradientBuffers > groups) {
            throw Errors.argument("gradientBuffers(" + gradientBuffers + ") exceeds the " + groups
                    + " groups: use at most " + groups + " (every gradient stays whole)");
        }
        this.plan = Schedule.plan(groups, slotCount);
        int positions = 2 * groups;
        this.ownsStream = b.stream == null;
        this.commStream = b.stream != null ? b.stream : Stream.create(comm.device());
        this.paramShard = new DeviceBuffer[groups];
        this.gradShard = new DeviceBuffer[groups];
        this.slots = new DeviceBuffer[slotCount];
        this.gradSlots = new DeviceBuffer[gradientBuffers];
        this.gatheredView = new DeviceBuffer[positions];
        this.gradView = new DeviceBuffer[groups];
        this.computeAt = new Event[positions];
        this.gatherStart = new Event[positions];
        this.gatherDone = new Event[positions];
        this.gradWritten = new Event[groups];
        this.reduceStart = new Event[groups];
        this.reduceDone = new Event[groups];
        DeviceBuffer params = null;
        DeviceBuffer grads = null;
        Event done = null;
        try {
            done = Event.create(comm.device());
            int size = type.size();
            params = DeviceBuffer.allocate(comm.device(), shardElements * size).fill(0);
            grads = DeviceBuffer.allocate(comm.device(), shardElements * size).fill(0);
            for (int g = 0; g < groups; g++) {
                paramShard[g] = params.slice(shardOffsets[g] * size, shardCounts[g] * size);
                gradShard[g] = grads.slice(shardOffsets[g] * size, shardCounts[g] * size);
            }
            for (int s = 0; s < slotCount; s++) {
                slots[s] = DeviceBuffer.allocate(comm.device(), widest * size).fill(0);
            }
            for (int s = 0; s < gradientBuffers; s++) {
                gradSlots[s] = DeviceBuffer.allocate(comm.device(), widest * size).fill(0); // padding stays 0
            }
            for (int p = 0; p < positions; p++) {
                gatheredView[p] = slots[plan.slot[p]].slice(0, padded[plan.group[p]] * size);
                computeAt[p] = Event.create(comm.device());
                if (plan.loads[p]) {
                    gatherStart[p] = Event.create(comm.device());
                    gatherDone[p] = Event.create(comm.device());
                }
            }
            for (int g = 0; g < groups; g++) {
                gradView[g] = gradSlots[gradientSlot(g)].slice(0, padded[g] * size);
                gradWritten[g] = Event.create(comm.device());
                reduceStart[g] = Event.create(comm.device());
                reduceDone[g] = Event.create(comm.device());
            }
        } catch (RuntimeException e) {
            if (done != null) {
                done.close();
            }
            closeAll(params, grads);
            throw e;
        }
        this.updatesDone = done;
        this.paramStore = params;
        this.gradStore = grads;
        this.nextReduce = groups - 1;
    }

    /**
     * @param comm the data-parallel communicator over which the groups are sharded
     * @return a builder
     * @throws NullPointerException when {@code comm} is null
     */
    public static Builder builder(Communicator comm) {
        if (comm == null) {
            throw Errors.nullArgument("comm");
        }
        return new Builder(comm);
    }

    // ---------------------------------------------------------------- shard arithmetic (pure)

    /**
     * {@code count} rounded up to a multiple of {@code ranks x alignment}, so that every rank's shard holds the same
     * whole number of alignment units.
     *
     * @param count elements of a group, {@code > 0}
     * @param ranks the communicator's size
     * @param alignment elements per alignment unit
     * @return the padded count
     */
    static long paddedCount(long count, int ranks, int alignment) {
        long unit = (long) ranks * alignment;
        return Math.multiplyExact((count + unit - 1) / unit, unit);
    }

    /**
     * @param count the group's real elements
     * @param shard the elements of each rank's shard
     * @param rank a rank
     * @return how many of rank {@code rank}'s shard elements are real: {@code shard}, fewer for the rank holding the
     *     end, 0 for ranks wholly in the padding
     */
    static long validCount(long count, long shard, int rank) {
        return Math.max(0, Math.min(shard, count - rank * shard));
    }

    /**
     * The gather schedule of one step: positions {@code 0 .. 2G-1} are groups {@code 0 .. G-1} (forward) then
     * {@code G-1 .. 0} (backward); for each, the buffer (slot) that holds the group, whether it is gathered there or
     * still held from an earlier position, and the position whose call issues the gather ({@code p - (B - 1)}, at
     * least 0: B - 1 positions ahead).
     *
     * <p>A gather never goes into a buffer that a position between its issuing call and itself uses (that work may
     * run when the gather lands); among the others it takes an empty buffer, else the one whose group is needed again
     * latest (or never), so that a group still held is reused, not gathered again. Every step starts with the
     * buffers empty, since the optimizer changed the parameters.
     */
    static final class Schedule {
        final int[] group;
        final int[] slot;
        final boolean[] loads;
        /** The position whose gather filled this position's slot with its group (itself when it loads). */
        final int[] source;
        /** Per position (a call), the positions whose gathers that call issues, in order. */
        final int[][] issues;

        private Schedule(int positions) {
            group = new int[positions];
            slot = new int[positions];
            loads = new boolean[positions];
            source = new int[positions];
            issues = new int[positions][];
        }

        static Schedule plan(int groups, int buffers) {
            int n = 2 * groups;
            Schedule s = new Schedule(n);
            for (int p = 0; p < n; p++) {
                s.group[p] = p < groups ? p : n - 1 - p;
            }
            int[] content = new int[buffers];
            int[] filledBy = new int[buffers];
            java.util.Arrays.fill(content, -1);
            List<List<Integer>> issued = new ArrayList<>();
            for (int p = 0; p < n; p++) {
                issued.add(new ArrayList<>());
            }
            for (int p = 0; p < n; p++) {
                int g = s.group[p];
                int held = -1;
                for (int k = 0; k < buffers; k++) {
                    if (content[k] == g) {
                        held = k;
                    }
                }
                if (held >= 0) {
                    s.slot[p] = held;
                    s.source[p] = filledBy[held];
                    continue;
                }
                int issue = Math.max(0, p - (buffers - 1));
                boolean[] locked = new boolean[buffers];
                for (int q = issue; q < p; q++) {
                    locked[s.slot[q]] = true;
                }
                int best = -1;
                int bestNext = -1;
                for (int k = 0; k < buffers; k++) {
                    if (locked[k]) {
                        continue;
                    }
                    int next = content[k] < 0 ? Integer.MAX_VALUE : nextUse(s.group, content[k], p + 1);
                    if (next > bestNext) {
                        best = k;
                        bestNext = next;
                    }
                }
                content[best] = g;
                filledBy[best] = p;
                s.slot[p] = best;
                s.loads[p] = true;
                s.source[p] = p;
                issued.get(issue).add(p);
            }
            for (int p = 0; p < n; p++) {
                s.issues[p] = issued.get(p).stream().mapToInt(Integer::intValue).toArray();
            }
            return s;
        }

        /** The first position from {@code from} on that uses {@code g}; {@code MAX_VALUE - 1} when none. */
        private static int nextUse(int[] group, int g, int from) {
            for (int q = from; q < group.length; q++) {
                if (group[q] == g) {
                    return q;
                }
            }
            return Integer.MAX_VALUE - 1;
        }
    }

    // ---------------------------------------------------------------- queries

    /** @return the number of parameter groups */
    public int groupCount() {
        return groups;
    }

    /**
     * @param group a group
     * @return its real elements, as registered
     */
    public long count(int group) {
        return counts[checkGroup(group)];
    }

    /**
     * @param group a group
     * @return its elements with the padding: the size of its gathered buffer ({@code ncclAllGather}'s receive count)
     */
    public long paddedCount(int group) {
        return padded[checkGroup(group)];
    }

    /**
     * @param group a group
     * @return the elements of each rank's shard of it (padding included)
     */
    public long shardCount(int group) {
        return shardCounts[checkGroup(group)];
    }

    /**
     * @param group a group
     * @return the element offset of this rank's shard of it in the flat shard buffers
     */
    public long shardOffset(int group) {
        return shardOffsets[checkGroup(group)];
    }

    /**
     * @param group a group
     * @return how many elements of this rank's shard of it are real, not padding
     */
    public long validCount(int group) {
        checkGroup(group);
        return validCount(counts[group], shardCounts[group], comm.rank());
    }

    /** @return the elements of this rank's flat shard buffers (every group's shard, padding included) */
    public long shardElements() {
        return shardElements;
    }

    /** @return this rank's flat parameter shards, every group's at its {@link #shardOffset(int)} */
    public DeviceBuffer parameterShards() {
        return paramStore;
    }

    /** @return this rank's flat gradient shards, written by the reduce-scatters */
    public DeviceBuffer gradientShards() {
        return gradStore;
    }

    /**
     * @param group a group
     * @return the view of this rank's parameter shard of that group ({@code ncclAllGather}'s send buffer)
     */
    public DeviceBuffer parameterShard(int group) {
        return paramShard[checkGroup(group)];
    }

    /**
     * @param group a group
     * @return the view of this rank's gradient shard of that group ({@code ncclReduceScatter}'s receive buffer)
     */
    public DeviceBuffer gradientShard(int group) {
        return gradShard[checkGroup(group)];
    }

    /** @return the number of gathered-parameter buffers */
    public int gatheredBuffers() {
        return slots.length;
    }

    /** @return the number of full-gradient buffers */
    public int gradientBuffers() {
        return gradientBuffers;
    }

    /** @return the device memory these shards hold: shards, gathered buffers and full-gradient buffers, in bytes */
    public long deviceBytes() {
        long b = paramStore.bytes() + gradStore.bytes();
        for (DeviceBuffer s : slots) {
            b += s.bytes();
        }
        for (DeviceBuffer s : gradSlots) {
            b += s.bytes();
        }
        return b;
    }

    /** @return the stream the all-gathers and reduce-scatters run on */
    public Stream communicationStream() {
        return commStream;
    }

    /**
     * @param position a position of a step's schedule, {@code 0 .. 2 groups - 1}
     * @return the group gathered (or reused) there: forward order, then backward order
     */
    public int scheduledGroup(int position) {
        return plan.group[checkPosition(position)];
    }

    /**
     * @param position a position of the schedule
     * @return whether that position all-gathers its group (false: still held in a buffer from an earlier position)
     */
    public boolean gathersAt(int position) {
        return plan.loads[checkPosition(position)];
    }

    /** @return the position of the schedule the next {@link #gather} call is at, 0 at the start of a step */
    public int position() {
        return position;
    }

    // ---------------------------------------------------------------- a step

    /**
     * The full parameters of {@code group} for work enqueued on {@code compute} from now until the next call of this
     * method: issues the {@code ncclAllGather}s due at this position of the schedule (this group's unless prefetched,
     * and the next ones' up to the number of buffers less one), each after the work already enqueued on
     * {@code compute}, then makes {@code compute} wait for this group's.
     *
     * @param group the group, as the schedule expects: {@code 0 .. G-1} then {@code G-1 .. 0}
     * @param compute the stream that reads the parameters
     * @return the gathered buffer, {@link #paddedCount(int)} elements, the group's at the start
     * @throws IllegalStateException when {@code group} is not the one the schedule expects, or this is closed
     */
    public DeviceBuffer gather(int group, Stream compute) {
        ensureOpen();
        if (compute == null) {
            throw Errors.nullArgument("compute");
        }
        int p = position;
        if (p >= plan.group.length || plan.group[p] != group) {
            throw outOfOrder(group, p);
        }
        int[] due = plan.issues[p];
        if (due.length > 0) {
            computeAt[p].record(compute);
            commStream.waitFor(computeAt[p]);
            for (int q : due) {
                gatherStart[q].record(commStream);
                comm.allGather(paramShard[plan.group[q]], gatheredView[q], type, commStream);
                gatherDone[q].record(commStream);
            }
        }
        compute.waitFor(gatherDone[plan.source[p]]);
        position = p + 1;
        return gatheredView[p];
    }

    private IllegalStateException outOfOrder(int group, int p) {
        if (p >= plan.group.length) {
            return new IllegalStateException("gather(" + group + "): this step's " + plan.group.length
                    + " gathers are done (forward then backward): call finish(compute) to end the step");
        }
        return new IllegalStateException("gather(" + group + ") out of order: position " + p + " of the step expects"
                + " group " + plan.group[p] + " (" + (p < groups ? "forward, groups 0.." + (groups - 1)
                : "backward, groups " + (groups - 1) + "..0") + ")");
    }

    /**
     * The full-size gradient buffer of {@code group}, whose first {@link #count(int)} elements the backward pass
     * writes (its padding stays zero): makes {@code compute} wait until the buffer's previous reduce-scatter has read
     * it. Call for the groups in backward order, each before its {@link #reduceScatter}.
     *
     * @param group the group whose reduce-scatter comes next ({@code G-1} first)
     * @param compute the stream that writes the gradient
     * @return the buffer, {@link #paddedCount(int)} elements
     * @throws IllegalStateException when {@code group} is not the next group of backward, or this is closed
     */
    public DeviceBuffer gradient(int group, Stream compute) {
        ensureOpen();
        if (compute == null) {
            throw Errors.nullArgument("compute");
        }
        checkNextReduce("gradient", group);
        int previous = group + gradientBuffers;   // the group that used this buffer before, in this step
        if (previous < groups) {
            compute.waitFor(reduceDone[previous]);
        }
        return gradView[group];
    }

    /**
     * Launches {@code ncclReduceScatter} of {@code group}'s full gradient into this rank's gradient shard of it, on
     * the communication stream after the work already enqueued on {@code compute} (that wrote the gradient), so that
     * it overlaps the rest of backward.
     *
     * @param group the group whose gradient is written, in backward order ({@code G-1} first)
     * @param compute the stream that wrote the gradient
     * @throws IllegalStateException when {@code group} is not the next group of backward, or this is closed
     */
    public void reduceScatter(int group, Stream compute) {
        ensureOpen();
        if (compute == null) {
            throw Errors.nullArgument("compute");
        }
        checkNextReduce("reduceScatter", group);
        gradWritten[group].record(compute);
        commStream.waitFor(gradWritten[group]);
        reduceStart[group].record(commStream);
        comm.reduceScatter(gradView[group], gradShard[group], type, op, commStream);
        reduceDone[group].record(commStream);
        nextReduce = group - 1;
        if (overlapOptimizer && hook != null) {
            hook.update(group, shardOffsets[group], shardCounts[group], commStream);
        }
    }

    private void checkNextReduce(String method, int group) {
        if (group != nextReduce) {
            throw new IllegalStateException(method + "(" + group + ") out of order: " + (nextReduce < 0
                    ? "every group's gradient was reduce-scattered in this step: call finish(compute)"
                    : "the next gradient of backward is group " + nextReduce + " (groups " + (groups - 1)
                    + " down to 0)"));
        }
    }

    /**
     * Makes {@code compute} wait for one group's reduce-scatter of this step, so that the caller may update that
     * group's shard itself (without a {@link Builder#optimizer hook}).
     *
     * @param group a group whose {@link #reduceScatter} was called in this step
     * @param compute the stream on which the optimizer reads the gradient shard
     * @throws IllegalStateException when that group's gradient was not reduce-scattered yet in this step
     */
    public void awaitGradient(int group, Stream compute) {
        ensureOpen();
        checkGroup(group);
        if (compute == null) {
            throw Errors.nullArgument("compute");
        }
        if (group <= nextReduce) {
            throw new IllegalStateException("awaitGradient(" + group + "): its reduceScatter was not called in this"
                    + " step (the next is group " + nextReduce + ")");
        }
        compute.waitFor(reduceDone[group]);
    }

    /**
     * Ends a step: for each group in the order of the reduce-scatters, makes {@code compute} wait for it and calls
     * the optimizer hook ({@link Builder#optimizer}), if any; then resets the schedule for the next step. When the
     * optimizer overlaps backward ({@link Builder#overlapOptimizer}), the updates were enqueued already: this makes
     * {@code compute} wait for the communication stream's work of the step, the last update included.
     *
     * @param compute the stream of the optimizer and of the next step
     * @throws IllegalStateException when a gather of the schedule or a group's reduce-scatter is missing
     */
    public void finish(Stream compute) {
        ensureOpen();
        if (compute == null) {
            throw Errors.nullArgument("compute");
        }
        if (nextReduce >= 0) {
            throw new IllegalStateException("finish: groups " + nextReduce + "..0 have no reduceScatter in this step:"
                    + " call gradient(g) and reduceScatter(g) for each group in backward order first");
        }
        if (position != plan.group.length) {
            throw new IllegalStateException("finish: the step made " + position + " of its " + plan.group.length
                    + " gathers (each group once forward, then once backward)");
        }
        if (overlapOptimizer) {
            updatesDone.record(commStream);
            compute.waitFor(updatesDone);
        } else {
            for (int g = groups - 1; g >= 0; g--) {
                compute.waitFor(reduceDone[g]);
                if (hook != null) {
                    hook.update(g, shardOffsets[g], shardCounts[g], compute);
                }
            }
        }
        position = 0;
        nextReduce = groups - 1;
    }

    /**
     * {@code ncclAllGather} of {@code group}'s parameter shards into {@code dst} on {@code stream}, outside the step's
     * schedule (to read or check the whole model). Collective: every rank calls it for the same group.
     *
     * @param group a group
     * @param dst at least {@link #paddedCount(int)} elements
     * @param stream the stream to enqueue on; it must not run while a step's gathers are in flight elsewhere
     * @throws IllegalArgumentException when {@code dst} is too small
     */
    public void gatherTo(int group, DeviceBuffer dst, Stream stream) {
        ensureOpen();
        checkGroup(group);
        if (dst == null) {
            throw Errors.nullArgument("dst");
        }
        if (stream == null) {
            throw Errors.nullArgument("stream");
        }
        long need = padded[group] * type.size();
        if (dst.bytes() < need) {
            throw Errors.argument("dst holds " + dst.bytes() + " bytes but group " + group + " gathers "
                    + padded[group] + " elements (" + need + " bytes, padding included): pass a buffer of at least"
                    + " paddedCount(" + group + ") elements");
        }
        comm.allGather(paramShard[group], dst.bytes() == need ? dst : dst.slice(0, need), type, stream);
    }

    /**
     * The last step's gather at {@code position}, relative to {@code reference} (an earlier event of the compute
     * stream). Synchronizes on its completion.
     *
     * @param position a position that gathers ({@link #gathersAt(int)})
     * @param reference an earlier event
     * @return {start ms, end ms}
     * @throws IllegalArgumentException when that position gathers nothing
     */
    public float[] gatherTiming(int position, Event reference) {
        if (!gathersAt(position)) {
            throw Errors.argument("position " + position + " gathers nothing (group " + plan.group[position]
                    + " is still held): ask gathersAt(position) first");
        }
        gatherDone[position].synchronize();
        return new float[] {gatherStart[position].elapsedSince(reference),
            gatherDone[position].elapsedSince(reference)};
    }

    /**
     * The last step's reduce-scatter of {@code group}, relative to {@code reference}. Synchronizes on it.
     *
     * @param group a group
     * @param reference an earlier event
     * @return {start ms, end ms}
     */
    public float[] reduceScatterTiming(int group, Event reference) {
        checkGroup(group);
        reduceDone[group].synchronize();
        return new float[] {reduceStart[group].elapsedSince(reference), reduceDone[group].elapsedSince(reference)};
    }

    private int checkGroup(int group) {
        if (group < 0 || group >= groups) {
            throw Errors.argument("group must be in 0.." + (groups - 1) + ", got " + group);
        }
        return group;
    }

    private int checkPosition(int position) {
        if (position < 0 || position >= plan.group.length) {
            throw Errors.argument("position must be in 0.." + (plan.group.length - 1) + ", got " + position);
        }
        return position;
    }

    private int gradientSlot(int group) {
        return (groups - 1 - group) % gradientBuffers;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("ParameterShards is closed");
        }
    }

    /** Frees the shards, the gathered and gradient buffers, the events and the stream it created. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        updatesDone.close();
        closeAll(paramStore, gradStore);
    }

    private void closeAll(DeviceBuffer params, DeviceBuffer grads) {
        closed = true;
        for (Event[] es : new Event[][] {computeAt, gatherStart, gatherDone, gradWritten, reduceStart, reduceDone}) {
            for (Event e : es) {
                if (e != null) {
                    e.close();
                }
            }
        }
        for (DeviceBuffer[] bs : new DeviceBuffer[][] {slots, gradSlots, {params, grads}}) {
            for (DeviceBuffer b : bs) {
                if (b != null) {
                    b.close();
                }
            }
        }
        if (ownsStream) {
            commStream.close();
        }
    }

    /** Configures {@link ParameterShards}. */
    public static final class Builder {
        private final Communicator comm;
        private final List<Long> counts = new ArrayList<>();
        private DataType type = DataType.FLOAT32;
        private boolean average = true;
        private ReduceOp op;
        private Stream stream;
        private int gathered;
        private int gradientSlots;
        private int alignment = 64;
        private ShardUpdate hook;
        private boolean overlapOptimizer;

        private Builder(Communicator comm) {
            this.comm = comm;
        }

        /**
         * Registers a parameter group (a layer: its parameters laid one after the other) of {@code count} elements;
         * call in forward order.
         *
         * @param count elements, {@code > 0}
         * @return this
         * @throws IllegalArgumentException when {@code count <= 0}
         */
        public Builder add(long count) {
            if (count <= 0) {
                throw Errors.argument("group " + counts.size() + ": count must be > 0, got " + count);
            }
            counts.add(count);
            return this;
        }

        /**
         * @param type the element type of parameters and gradients (default FLOAT32)
         * @return this
         */
        public Builder dataType(DataType type) {
            if (type == null) {
                throw Errors.nullArgument("type");
            }
            this.type = type;
            return this;
        }

        /**
         * @param average true (default): gradients are averaged over ranks ({@code ncclAvg}); false: summed
         * @return this
         */
        public Builder average(boolean average) {
            this.average = average;
            return this;
        }

        /**
         * @param op the reduce-scatter's operator, for example a {@link ReduceOp.PreMulSum} of 1/ranks made with
         *     {@link Communicator#createPreMulSum(double, DataType)} (the caller closes it after the shards); it
         *     takes precedence over {@link #average(boolean)}
         * @return this
         */
        public Builder reduceOp(ReduceOp op) {
            if (op == null) {
                throw Errors.nullArgument("op");
            }
            this.op = op;
            return this;
        }

        /**
         * @param buffers gathered-parameter buffers, 1 up to the number of groups (default 2: one computing, one
         *     being gathered); as many as groups keeps the full parameters through the step (ZeRO-2)
         * @return this
         */
        public Builder gatheredBuffers(int buffers) {
            if (buffers < 1) {
                throw Errors.argument("gatheredBuffers must be >= 1 (2 overlaps the gathers with compute), got "
                        + buffers);
            }
            this.gathered = buffers;
            return this;
        }

        /**
         * @param buffers full-gradient buffers, 1 up to the number of groups (default 2); as many as groups keeps
         *     every full gradient (the memory of ZeRO-1)
         * @return this
         */
        public Builder gradientBuffers(int buffers) {
            if (buffers < 1) {
                throw Errors.argument("gradientBuffers must be >= 1 (2 lets backward write one gradient while the"
                        + " previous is reduce-scattered), got " + buffers);
            }
            this.gradientSlots = buffers;
            return this;
        }

        /**
         * @param elements each rank's shard of a group is a multiple of this many elements (default 64: 256 bytes of
         *     FLOAT32), so that every shard starts aligned
         * @return this
         */
        public Builder alignment(int elements) {
            if (elements < 1) {
                throw Errors.argument("alignment must be >= 1 element, got " + elements);
            }
            this.alignment = elements;
            return this;
        }

        /**
         * @param stream the stream of the all-gathers and reduce-scatters (default: a new one, closed with the shards)
         * @return this
         */
        public Builder stream(Stream stream) {
            this.stream = stream;
            return this;
        }

        /**
         * @param update called by {@link ParameterShards#finish} for each group once its gradient shard is reduced
         * @return this
         */
        public Builder optimizer(ShardUpdate update) {
            this.hook = update;
            return this;
        }

        /**
         * @param overlap true: the {@link #optimizer hook} is called by {@link ParameterShards#reduceScatter} for its
         *     group with the communication stream, right behind the group's reduce-scatter, so that the updates
         *     overlap the rest of backward (the last group's update is then all that follows backward); false
         *     (default): {@link ParameterShards#finish} calls it with the compute stream, after backward
         * @return this
         */
        public Builder overlapOptimizer(boolean overlap) {
            this.overlapOptimizer = overlap;
            return this;
        }

        /**
         * Allocates the shards (zeroed) and buffers: no communication.
         *
         * @return the shards
         * @throws IllegalArgumentException when no group was added, or a buffer count exceeds the groups
         */
        public ParameterShards build() {
            if (counts.isEmpty()) {
                throw Errors.argument("register at least one parameter group with add(count)");
            }
            return new ParameterShards(this);
        }
    }
}
