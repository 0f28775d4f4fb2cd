package org.nccl4j.examples;

import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Event;
import org.nccl4j.ParameterShards;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;

/**
 * The DDP form of {@link ShardedTraining}'s model, its baseline ({@code --mode ddp}): every rank holds all the
 * layers' parameters, gradients (and, in the caller's buffers, Adam state), laid one layer after the other as
 * {@link ParameterShards} lays its shards; each layer's gradient is averaged over ranks by an in-place
 * {@code ncclAllReduce} on a communication stream as soon as backward has written it. The update of a layer reuses
 * {@link ParameterShards.ShardUpdate}: with the optimizer overlapped it is enqueued on the communication stream behind
 * the layer's all-reduce once backward has read the layer's weights for the last time ({@link #weightsRead}); otherwise
 * {@link #finish} enqueues every update on the compute stream after backward. Not thread-safe; nothing allocated per
 * step on the Java heap nor on the device.
 */
final class ReplicatedLayers implements AutoCloseable {
    private final Communicator comm;
    private final int layers;
    private final long layerCount;
    private final boolean overlap;
    private final ParameterShards.ShardUpdate update;
    private final Stream commStream;
    private final DeviceBuffer params;
    private final DeviceBuffer grads;
    private final DeviceBuffer[] paramView;
    private final DeviceBuffer[] gradView;
    private final Event[] written;
    private final Event[] read;
    private final Event[] start;
    private final Event[] done;
    private final Event updates;

    /**
     * Allocates the parameters and gradients (zeroed) and a communication stream: no communication.
     *
     * @param comm the data-parallel communicator
     * @param layers the layers
     * @param layerCount each layer's elements (float32)
     * @param overlap true: each layer's update runs on the communication stream behind its all-reduce
     * @param update the optimizer's update of one layer ({@code offset} = layer x layerCount, {@code count} =
     *     layerCount)
     */
    ReplicatedLayers(Communicator comm, int layers, long layerCount, boolean overlap,
            ParameterShards.ShardUpdate update) {
        this.comm = comm;
        this.layers = layers;
        this.layerCount = layerCount;
        this.overlap = overlap;
        this.update = update;
        int device = comm.device();
        this.paramView = new DeviceBuffer[layers];
        this.gradView = new DeviceBuffer[layers];
        this.written = new Event[layers];
        this.read = new Event[layers];
        this.start = new Event[layers];
        this.done = new Event[layers];
        long bytes = Math.multiplyExact(Math.multiplyExact((long) layers, layerCount), 4L);
        Stream s = null;
        DeviceBuffer p = null;
        DeviceBuffer g = null;
        Event u = null;
        try {
            s = Stream.create(device);
            p = DeviceBuffer.allocate(device, bytes).fill(0);
            g = DeviceBuffer.allocate(device, bytes).fill(0);
            u = Event.create(device);
            for (int l = 0; l < layers; l++) {
                paramView[l] = p.slice(4 * l * layerCount, 4 * layerCount);
                gradView[l] = g.slice(4 * l * layerCount, 4 * layerCount);
                written[l] = Event.create(device);
                read[l] = Event.create(device);
                start[l] = Event.create(device);
                done[l] = Event.create(device);
            }
        } catch (RuntimeException e) {
            closeAll(s, p, g, u);
            throw e;
        }
        this.commStream = s;
        this.params = p;
        this.grads = g;
        this.updates = u;
    }

    /** @return the flat parameters, layer l at element l x layerCount */
    DeviceBuffer parameters() {
        return params;
    }

    /** @return the flat gradients, laid out as the parameters */
    DeviceBuffer gradients() {
        return grads;
    }

    /**
     * @param layer a layer
     * @return its parameters (W then b)
     */
    DeviceBuffer layer(int layer) {
        return paramView[layer];
    }

    /**
     * @param layer a layer
     * @return the address of its gradient, written by backward
     */
    long gradient(int layer) {
        return gradView[layer].address();
    }

    /** @return the stream of the all-reduces (and of the overlapped updates) */
    Stream communicationStream() {
        return commStream;
    }

    /** @return the bytes of parameters and gradients on the device */
    long deviceBytes() {
        return params.bytes() + grads.bytes();
    }

    /**
     * Averages {@code layer}'s gradient over ranks ({@code ncclAllReduce}, in place) on the communication stream after
     * the work enqueued on {@code compute}, which wrote it.
     *
     * @param layer the layer whose gradient backward wrote
     * @param compute the compute stream
     */
    void allReduce(int layer, Stream compute) {
        written[layer].record(compute);
        commStream.waitFor(written[layer]);
        start[layer].record(commStream);
        comm.allReduce(gradView[layer], DataType.FLOAT32, ReduceOp.AVG, commStream);
        done[layer].record(commStream);
    }

    /**
     * Backward has enqueued its last read of {@code layer}'s weights on {@code compute}: with the optimizer overlapped,
     * the layer's update follows on the communication stream, behind its all-reduce and that read.
     *
     * @param layer the layer
     * @param compute the compute stream
     */
    void weightsRead(int layer, Stream compute) {
        if (!overlap) {
            return;
        }
        read[layer].record(compute);
        commStream.waitFor(read[layer]);
        update.update(layer, layer * layerCount, layerCount, commStream);
    }

    /**
     * Ends a step: the compute stream waits for the updates (overlapped), or for each all-reduce and then runs the
     * layer's update on it.
     *
     * @param compute the compute stream
     */
    void finish(Stream compute) {
        if (overlap) {
            updates.record(commStream);
            compute.waitFor(updates);
            return;
        }
        for (int l = layers - 1; l >= 0; l--) {
            compute.waitFor(done[l]);
            update.update(l, l * layerCount, layerCount, compute);
        }
    }

    /**
     * The last step's all-reduce of {@code layer}, relative to {@code reference}. Synchronizes on it.
     *
     * @param layer a layer
     * @param reference an earlier event
     * @return {start ms, end ms}
     */
    float[] timing(int layer, Event reference) {
        done[layer].synchronize();
        return new float[] {start[layer].elapsedSince(reference), done[layer].elapsedSince(reference)};
    }

    @Override
    public void close() {
        closeAll(commStream, params, grads, updates);
    }

    private void closeAll(Stream s, DeviceBuffer p, DeviceBuffer g, Event u) {
        for (Event[] es : new Event[][] {written, read, start, done, {u}}) {
            for (Event e : es) {
                if (e != null) {
                    e.close();
                }
            }
        }
        for (DeviceBuffer b : new DeviceBuffer[] {p, g}) {
            if (b != null) {
                b.close();
            }
        }
        if (s != null) {
            s.close();
        }
    }
}
