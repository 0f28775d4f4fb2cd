package org.nccl4j.examples;

// The program of README.md ("A program"), kept here word for word so that CI compiles it; only the class name
// differs (Sum there, ReadmeSum here). ReadmeSumTest fails when the two drift apart. It prints each rank's
// first element (the sum of 1..n over n ranks) and checks nothing, unlike the other examples.
// Run: scripts/nccl4j-run -np 2 ReadmeSum     (or alone: rank 0 of 1)

import org.nccl4j.*;

public class ReadmeSum {
    public static void main(String[] args) {
        try (Communicator comm = Communicator.fromEnvironment();          // rank, size, device, id exchange
             Stream stream = Stream.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), 1024, DataType.FLOAT32)) {
            float[] x = new float[1024];
            java.util.Arrays.fill(x, comm.rank() + 1);
            buf.copyFrom(x);
            comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);   // ncclAllReduce, in place
            stream.synchronize();
            System.out.println("rank " + comm.rank() + ": " + buf.copyTo(new float[1024])[0]);
        }
    }
}
