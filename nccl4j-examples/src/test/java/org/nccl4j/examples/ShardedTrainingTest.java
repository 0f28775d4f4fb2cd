package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** {@link ShardedTraining}'s pure parts: the modes' buffer counts, the hidden fraction, the checksum, the options. */
class ShardedTrainingTest {
    @Test
    void eachModeKeepsItsBuffersAndTheCommandLineOverridesThem() {
        assertEquals(2, ShardedTraining.gatheredBuffers(ShardedTraining.Mode.ZERO3, 80, 0));
        assertEquals(2, ShardedTraining.gradientBuffers(ShardedTraining.Mode.ZERO3, 80, 0));
        assertEquals(80, ShardedTraining.gatheredBuffers(ShardedTraining.Mode.ZERO2, 80, 0), "full parameters");
        assertEquals(2, ShardedTraining.gradientBuffers(ShardedTraining.Mode.ZERO2, 80, 0));
        assertEquals(80, ShardedTraining.gatheredBuffers(ShardedTraining.Mode.ZERO1, 80, 0));
        assertEquals(80, ShardedTraining.gradientBuffers(ShardedTraining.Mode.ZERO1, 80, 0), "full gradients");
        assertEquals(1, ShardedTraining.gatheredBuffers(ShardedTraining.Mode.ZERO3, 1, 0), "never more than layers");
        assertEquals(3, ShardedTraining.gatheredBuffers(ShardedTraining.Mode.ZERO3, 80, 3));
        assertEquals(5, ShardedTraining.gradientBuffers(ShardedTraining.Mode.ZERO1, 80, 5));
    }

    @Test
    void theHiddenFractionIsTheCommunicationTheComputeStreamDidNotWaitFor() {
        assertEquals(0.75, ShardedTraining.hiddenFraction(40, 10), 1e-12);
        assertEquals(1.0, ShardedTraining.hiddenFraction(40, 0), 1e-12);
        assertEquals(0.0, ShardedTraining.hiddenFraction(40, 55), 1e-12, "waits beyond the communication: none hidden");
        assertTrue(Double.isNaN(ShardedTraining.hiddenFraction(0, 3)));
    }

    @Test
    void theChecksumReadsWholeWordsAndTheTailAndSeesEveryBit() {
        ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, 0x0102030405060708L).putInt(8, 0x0a0b0c0d);
        long expected = ((Checksum.OFFSET_BASIS ^ 0x0102030405060708L) * 0x100000001b3L ^ 0x0a0b0c0dL) * 0x100000001b3L;
        assertEquals(expected, ShardedTraining.wordChecksum(Checksum.OFFSET_BASIS, b));
        assertEquals(0, b.position(), "the buffer's position is left alone");
        long whole = ShardedTraining.wordChecksum(Checksum.OFFSET_BASIS, b);
        b.put(11, (byte) 0x80);
        assertNotEquals(whole, ShardedTraining.wordChecksum(Checksum.OFFSET_BASIS, b), "the tail's last bit counts");
        long part = ShardedTraining.wordChecksum(Checksum.OFFSET_BASIS, b.duplicate().limit(8));
        assertEquals((Checksum.OFFSET_BASIS ^ 0x0102030405060708L) * 0x100000001b3L, part);
    }

    private static ShardedTraining.Options parsed(String... args) {
        ShardedTraining.Options o = Args.parse(new ShardedTraining.Options(), args);
        o.check();
        return o;
    }

    @Test
    void theDefaultsAreTheEightyLayerModelAndOptionsAreChecked() {
        ShardedTraining.Options o = parsed();
        assertEquals(80, o.layers);
        assertEquals(8192, o.size);
        assertEquals(1024, o.batch);
        assertEquals(ShardedTraining.Mode.ZERO3, o.mode);
        assertTrue(o.checksum);
        assertTrue(o.optimizerOverlap, "Adam follows each reduce-scatter unless told otherwise");
        assertEquals(1e-4f, o.lr);
        assertEquals(null, o.trace);
        o = parsed("--mode", "ddp", "--no-optimizer-overlap", "--trace", "t{rank}.json");
        assertEquals(ShardedTraining.Mode.DDP, o.mode);
        assertFalse(o.optimizerOverlap);
        assertEquals("t1.json", DdpOptions.perRankFile(o.trace, 1, 2));
        assertEquals("t_rank1.json", DdpOptions.perRankFile("t.json", 1, 2));
        o = parsed("--mode", "ZeRO2", "--layers", "4", "--gathered-buffers", "3", "--no-checksum");
        assertEquals(ShardedTraining.Mode.ZERO2, o.mode);
        assertEquals(3, o.gatheredBuffers);
        assertFalse(o.checksum);
        Args.UsageException e = assertThrows(Args.UsageException.class, () -> parsed("--layers", "4",
                "--gathered-buffers", "5"));
        assertEquals("Invalid value for option '--gathered-buffers': 5 (1 to --layers, 4; 0 for the mode's)",
                e.getMessage());
        e = assertThrows(Args.UsageException.class, () -> parsed("--size", "3", "--batch", "3"));
        assertEquals("--size x --batch must be even (cuRAND draws normals in pairs), got 3 x 3", e.getMessage());
        e = assertThrows(Args.UsageException.class, () -> parsed("--steps", "0"));
        assertEquals("Invalid value for option '--steps': 0 (a whole number greater than 0)", e.getMessage());
        e = assertThrows(Args.UsageException.class, () -> Args.parse(new ShardedTraining.Options(), "--mode",
                "zero4"));
        assertTrue(e.getMessage().startsWith("Invalid value for option '--mode': 'zero4' is not one of zero3, zero2,"
                + " zero1, ddp"), e.getMessage());
    }
}
