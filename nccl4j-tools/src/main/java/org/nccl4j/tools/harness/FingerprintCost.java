package org.nccl4j.tools.harness;

import java.util.Locale;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Stream;
import org.nccl4j.UniqueId;
import org.nccl4j.diagnostics.ExitStatus;
import org.nccl4j.diagnostics.StepStats;
import org.nccl4j.tools.cli.Programs;
import org.nccl4j.tools.cli.Tools;
import picocli.CommandLine.Command;

/**
 * The cost of the collective fingerprint per operation (what the liveness heartbeat reports and rank 0 compares, see
 * {@link CommConfig.Builder#fingerprint}): two one-rank communicators on GPU 0, one with it (the default) and one
 * without, each enqueuing 8-byte all-reduces; 30 rounds of 10,000, the two alternating in each round (and which goes
 * first alternates), after 3 rounds of warm-up. Prints the median host time per enqueue of each, their difference and
 * the bytes allocated per operation on the caller's thread; exits 0 when the fingerprinted communicator allocated
 * nothing.
 */
public final class FingerprintCost {
    private static final int ROUNDS = 30;
    private static final int OPS = 10_000;

    private FingerprintCost() {
    }

    /**
     * Runs the measurement.
     *
     * @param args none
     */
    public static void main(String[] args) {
        Tools.parseOrExit(new Options(), args);   // --help, --version; no other option
        System.exit(ExitStatus.of("FingerprintCost", FingerprintCost::run));
    }

    static int run() {
        try (Communicator on = Communicator.create(0, 1, UniqueId.generate(), 0,
                    CommConfig.builder().commName("fingerprint").build());
             Communicator off = Communicator.create(0, 1, UniqueId.generate(), 0,
                    CommConfig.builder().commName("no-fingerprint").fingerprint(false).build());
             Stream stream = Stream.create(0);
             DeviceBuffer buf = DeviceBuffer.allocate(0, 2, DataType.FLOAT32)) {
            EagerRounds.RoundCosts timed = EagerRounds.time(new Communicator[] {off, on}, new int[] {OPS, OPS}, buf,
                    stream, ROUNDS, 3, null);
            double[][] us = timed.microsPerOp();
            long[] bytes = timed.heapBytes();
            double without = StepStats.median(us[0]);
            double with = StepStats.median(us[1]);
            System.out.printf(Locale.ROOT, "%-16s %12s %14s %12s%n", "8 B all-reduce", "host us/op",
                    "vs off", "heap B/op");
            System.out.printf(Locale.ROOT, "%-16s %12.4f %+14.4f %12.4f%n", "fingerprint off", without, 0.0,
                    (double) bytes[0] / ROUNDS / OPS);
            System.out.printf(Locale.ROOT, "%-16s %12.4f %+14.4f %12.4f%n", "fingerprint on", with, with - without,
                    (double) bytes[1] / ROUNDS / OPS);
            StringBuilder diffs = new StringBuilder();
            for (int r = 0; r < ROUNDS; r++) {
                diffs.append(r == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%+.4f", us[1][r] - us[0][r]));
            }
            System.out.println("on - off, per round: [" + diffs + "]");
            System.out.printf(Locale.ROOT, "median of %d rounds of %d operations, the two alternating%n", ROUNDS, OPS);
            boolean ok = bytes[1] == 0;
            System.out.println(ok ? "PASSED: nothing allocated with the fingerprint on"
                    : "FAILED: allocated " + bytes[1] + " bytes with the fingerprint on");
            return ok ? 0 : 1;
        }
    }

    /** The command line: no option but {@code --help} and {@code --version}. */
    @Command(name = "FingerprintCost", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            description = "The cost of the collective fingerprint per operation, on vs off.")
    static final class Options {
    }
}
