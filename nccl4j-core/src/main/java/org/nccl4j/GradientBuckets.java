package org.nccl4j;

import java.util.ArrayList;
import java.util.List;

/**
 * Bucketed gradient all-reduce for data-parallel training: gradients live as views in flat per-bucket
 * device storage; each bucket is all-reduced ({@code ncclAllReduce}) on a communication stream as soon as
 * its last gradient is written, so communication overlaps the rest of the backward pass.
 *
 * <p>Gradients are registered in forward order ({@link Builder#add}); buckets are filled in reverse order of
 * registration, since backward produces the last layer's gradients first, and a bucket is closed when adding
 * the next gradient would exceed the cap ({@link Builder#bucketCapMB}, default 25 MB, as PyTorch DDP). A
 * gradient larger than the cap gets a bucket of its own.
 *
 * <p>Per step: write each gradient into {@link #gradient(int)} on the compute stream, call
 * {@link #ready(int, Stream)} after enqueueing the kernel that produced it, then {@link #finish(Stream)} before
 * the optimizer reads the gradients: it makes the compute stream wait for every bucket's all-reduce. The
 * calls of a step allocate nothing on the Java heap. Not thread-safe: one training thread per instance.
 */
public final class GradientBuckets implements AutoCloseable {
    private final Communicator comm;
    private final DataType type;
    private final ReduceOp op;
    private final Stream commStream;
    private final boolean ownsStream;
    private final DeviceBuffer[] storage;
    /** Per bucket, the symmetric window holding its storage ({@link Builder#symmetric}), or null without. */
    private final Window[] windows;
    private final DeviceBuffer[] gradients;
    private final int[] bucketOf;
    private final int[] members;
    /** Per bucket, its gradients not yet marked ready in this step; 0 once its all-reduce is launched. */
    private final int[] pending;
    private final Event[] gradsWritten;
    private final Event[] started;
    private final Event[] done;
    private boolean closed;

    private GradientBuckets(Builder b) {
        this.comm = b.comm;
        this.type = b.type;
        this.op = b.average ? ReduceOp.AVG : ReduceOp.SUM;
        this.ownsStream = b.stream == null;
        this.commStream = b.stream != null ? b.stream : Stream.create(comm.device());
        long cap = (long) (b.capMB * 1024 * 1024);
        int n = b.counts.size();
        this.bucketOf = new int[n];
        // assign buckets walking the gradients in reverse (backward) order
        List<Long> bucketBytes = new ArrayList<>();
        List<List<Integer>> bucketMembers = new ArrayList<>();
        long current = 0;
        for (int i = n - 1; i >= 0; i--) {
            long bytes = b.counts.get(i) * type.size();
            if (bucketMembers.isEmpty() || (current > 0 && current + bytes > cap)) {
                bucketMembers.add(new ArrayList<>());
                bucketBytes.add(0L);
                current = 0;
            }
            int bucket = bucketMembers.size() - 1;
            bucketMembers.get(bucket).add(i);
            bucketOf[i] = bucket;
            current += bytes;
            bucketBytes.set(bucket, current);
        }
        int nb = bucketMembers.size();
        this.storage = new DeviceBuffer[nb];
        this.windows = b.symmetric ? new Window[nb] : null;
        this.gradients = new DeviceBuffer[n];
        this.members = new int[nb];
        this.pending = new int[nb];
        this.gradsWritten = new Event[nb];
        this.started = new Event[nb];
        this.done = new Event[nb];
        try {
            for (int k = 0; k < nb; k++) {
                if (windows != null) {
                    windows[k] = Window.allocate(comm, bucketBytes.get(k));
                    storage[k] = windows[k].buffer();
                } else {
                    storage[k] = DeviceBuffer.allocate(comm.device(), bucketBytes.get(k));
                }
                long offset = 0;
                // within a bucket, lay gradients out in forward order so that views are contiguous per layer
                List<Integer> m = bucketMembers.get(k);
                for (int j = m.size() - 1; j >= 0; j--) {
                    int i = m.get(j);
                    long bytes = b.counts.get(i) * type.size();
                    gradients[i] = storage[k].slice(offset, bytes);
                    offset += bytes;
                }
                members[k] = m.size();
                pending[k] = m.size();
                gradsWritten[k] = Event.create(comm.device());
                started[k] = Event.create(comm.device());
                done[k] = Event.create(comm.device());
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /**
     * @param comm the data-parallel communicator
     * @return a builder
     */
    public static Builder builder(Communicator comm) {
        if (comm == null) {
            throw Errors.nullArgument("comm");
        }
        return new Builder(comm);
    }

    /** @return whether the buckets lie in symmetric windows ({@link Builder#symmetric}) */
    public boolean isSymmetric() {
        return windows != null;
    }

    /** @return the number of buckets */
    public int bucketCount() {
        return storage.length;
    }

    /**
     * @param bucket a bucket index
     * @return its size in bytes
     */
    public long bucketBytes(int bucket) {
        return storage[bucket].bytes();
    }

    /**
     * @param gradient a gradient index (registration order)
     * @return the bucket holding it
     */
    public int bucketOf(int gradient) {
        return bucketOf[gradient];
    }

    /**
     * @param gradient a gradient index (registration order)
     * @return the view of the flat bucket storage where that gradient is written and averaged
     */
    public DeviceBuffer gradient(int gradient) {
        return gradients[gradient];
    }

    /** @return the stream the all-reduces run on */
    public Stream communicationStream() {
        return commStream;
    }

    /**
     * Marks a gradient as written by work already enqueued on {@code compute}. When it is the last of its
     * bucket, the bucket's all-reduce is launched on the communication stream after that work.
     *
     * @param gradient a gradient index (registration order)
     * @param compute the stream whose enqueued work writes the gradient
     */
    public void ready(int gradient, Stream compute) {
        if (closed) {
            throw new IllegalStateException("GradientBuckets is closed");
        }
        if (gradient < 0 || gradient >= gradients.length) {
            throw Errors.argument("gradient must be in 0.." + (gradients.length - 1) + ", got " + gradient);
        }
        int k = bucketOf[gradient];
        if (pending[k] == 0) {
            throw new IllegalStateException("gradient " + gradient + " (bucket " + k + ") was already marked ready"
                    + " in this step: call finish() before the next step");
        }
        if (--pending[k] == 0) {
            launch(k, compute);
        }
    }

    private void launch(int k, Stream compute) {
        gradsWritten[k].record(compute);
        commStream.waitFor(gradsWritten[k]);
        started[k].record(commStream);
        comm.allReduce(storage[k], type, op, commStream);
        done[k].record(commStream);
        pending[k] = 0;
    }

    /**
     * Makes {@code compute} wait for one bucket's all-reduce of this step (launching it first if a gradient of it
     * was never marked ready), so that the optimizer can update that bucket's parameters while later buckets are
     * still being reduced, as PyTorch's DDP optimizer overlap does. {@link #finish} still ends the step.
     *
     * @param bucket a bucket index, 0 being the first launched (see {@link #bucketOf})
     * @param compute the stream on which the optimizer will read the bucket's gradients
     * @throws IllegalArgumentException when {@code bucket} is not a bucket's index
     */
    public void await(int bucket, Stream compute) {
        if (closed) {
            throw new IllegalStateException("GradientBuckets is closed");
        }
        if (bucket < 0 || bucket >= storage.length) {
            throw Errors.argument("bucket must be in 0.." + (storage.length - 1) + ", got " + bucket);
        }
        if (compute == null) {
            throw Errors.nullArgument("compute");
        }
        if (pending[bucket] != 0) {
            launch(bucket, compute);   // a gradient never marked ready keeps its written value, as in finish
        }
        compute.waitFor(done[bucket]);
    }

    /**
     * Ends a step: launches any bucket not yet launched (a gradient never marked ready keeps its written
     * value), then makes {@code compute} wait for every bucket's all-reduce, and resets for the next step.
     *
     * @param compute the stream on which the optimizer will read the gradients
     */
    public void finish(Stream compute) {
        if (closed) {
            throw new IllegalStateException("GradientBuckets is closed");
        }
        for (int k = 0; k < storage.length; k++) {
            if (pending[k] != 0) {
                launch(k, compute);
            }
        }
        for (int k = 0; k < storage.length; k++) {
            compute.waitFor(done[k]);
            pending[k] = members[k];
        }
    }

    /**
     * Times of the last step's all-reduces relative to {@code reference}, an event recorded earlier on the
     * compute stream. Synchronizes on the buckets' completion.
     *
     * @param bucket a bucket index
     * @param reference an earlier event
     * @return {start ms, end ms} of that bucket's all-reduce after {@code reference}
     */
    public float[] timing(int bucket, Event reference) {
        done[bucket].synchronize();
        return new float[] {started[bucket].elapsedSince(reference), done[bucket].elapsedSince(reference)};
    }

    /**
     * Frees the bucket storage ({@code ncclCommWindowDeregister} then {@code ncclMemFree} for symmetric buckets),
     * events and the stream it created. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Event[] es : new Event[][] {gradsWritten, started, done}) {
            for (Event e : es) {
                if (e != null) {
                    e.close();
                }
            }
        }
        if (windows != null) {
            for (Window w : windows) {
                if (w != null) {
                    w.close();   // deregisters, then frees the memory
                }
            }
        } else {
            for (DeviceBuffer s : storage) {
                if (s != null) {
                    s.close();
                }
            }
        }
        if (ownsStream) {
            commStream.close();
        }
    }

    /** Configures {@link GradientBuckets}. */
    public static final class Builder {
        private final Communicator comm;
        private final List<Long> counts = new ArrayList<>();
        private DataType type = DataType.FLOAT32;
        private double capMB = 25;
        private boolean average = true;
        private Stream stream;
        private boolean symmetric;

        private Builder(Communicator comm) {
            this.comm = comm;
        }

        /**
         * Registers a gradient of {@code count} elements; call in forward order (first layer first).
         *
         * @param count elements, {@code > 0}
         * @return this
         */
        public Builder add(long count) {
            if (count <= 0) {
                throw Errors.argument("gradient count must be > 0, got " + count);
            }
            counts.add(count);
            return this;
        }

        /**
         * @param type the gradients' element type (default FLOAT32)
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
         * @param mb bucket cap in MB (2^20 bytes), {@code > 0}; default 25
         * @return this
         */
        public Builder bucketCapMB(double mb) {
            if (!(mb > 0)) {
                throw Errors.argument("bucket cap must be > 0 MB, got " + mb);
            }
            this.capMB = mb;
            return this;
        }

        /**
         * @param average true (default): average over ranks ({@code ncclAvg}); false: sum
         * @return this
         */
        public Builder average(boolean average) {
            this.average = average;
            return this;
        }

        /**
         * @param stream the stream to all-reduce on (default: a new one, closed with the buckets)
         * @return this
         */
        public Builder stream(Stream stream) {
            this.stream = stream;
            return this;
        }

        /**
         * Puts each bucket in a symmetric window ({@link Window#allocate(Communicator, long)}: {@code ncclMemAlloc},
         * then {@code ncclCommWindowRegister} with {@code NCCL_WIN_COLL_SYMMETRIC}, NCCL 2.27+) instead of
         * {@code cudaMalloc} memory, so that NCCL may run its symmetric all-reduce kernels on them. Off by default.
         *
         * <p>{@link #build()} then registers one window per bucket, which is collective: every rank builds with the
         * same gradients in the same order (as the all-reduces need anyway), so the windows are registered in the
         * same order, with the same sizes and the same layout on every rank, as NCCL requires.
         *
         * <p>When it helps: ranks within one NVLink domain (NCCL 2.27 and 2.28 run the symmetric kernels over
         * NVLink and PCIe peer-to-peer only), buckets of {@link DataType#FLOAT32} or a smaller floating point type,
         * and small to medium buckets, where the kernels' lower latency counts most. NCCL's symmetric all-reduce
         * kernels take {@link ReduceOp#SUM} only (through 2.30): with {@link #average(boolean) average(true)}, the
         * default, NCCL all-reduces the buckets with its other kernels, so use {@code average(false)} and scale the
         * sum yourself. Elsewhere the buckets work as plain ones, at the cost of the registration at build.
         *
         * @param on true to put the buckets in symmetric windows
         * @return this
         */
        public Builder symmetric(boolean on) {
            this.symmetric = on;
            return this;
        }

        /** Registers {@code counts} in order and builds (a shorthand for tests and simple models). */
        GradientBuckets build0(long... counts) {
            for (long c : counts) {
                add(c);
            }
            return build();
        }

        /**
         * @return the buckets, with their device storage allocated (and, with {@link #symmetric(boolean)},
         *     registered as windows: collective)
         * @throws UnsupportedOperationException with {@code symmetric(true)} when the loaded NCCL is older than 2.27
         */
        public GradientBuckets build() {
            if (counts.isEmpty()) {
                throw Errors.argument("register at least one gradient with add(count)");
            }
            return new GradientBuckets(this);
        }
    }
}
