package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ChecksumTest {
    @Test
    void fnv1a64KnownValues() {
        assertEquals(0xcbf29ce484222325L, Checksum.fnv1a(new byte[0]));
        assertEquals(0xaf63dc4c8601ec8cL, Checksum.fnv1a("a".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(0x85944171f73967e8L, Checksum.fnv1a("foobar".getBytes(StandardCharsets.US_ASCII)));
        assertEquals("85944171f73967e8", Checksum.hex(0x85944171f73967e8L));
        assertEquals("0000000000000001", Checksum.hex(1));
    }

    @Test
    void updateChainsAndRespectsPositionAndLimit() {
        byte[] all = "foobar".getBytes(StandardCharsets.US_ASCII);
        ByteBuffer b = ByteBuffer.wrap(all);
        long h = Checksum.update(Checksum.OFFSET_BASIS, b.duplicate().limit(3));
        h = Checksum.update(h, b.duplicate().position(3));
        assertEquals(Checksum.fnv1a(all), h);
        ByteBuffer mid = b.duplicate().limit(5).position(1); // "ooba"
        assertEquals(Checksum.fnv1a("ooba".getBytes(StandardCharsets.US_ASCII)), Checksum.fnv1a(mid));
        assertEquals(1, mid.position()); // unchanged
    }

    @Test
    void aOneBitChangeInOneFloatChangesTheSum() {
        ByteBuffer w = ByteBuffer.allocate(4 * 1000).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 1000; i++) {
            w.putFloat(4 * i, (float) Math.sin(i));
        }
        long base = Checksum.fnv1a(w);
        Set<Long> seen = new HashSet<>();
        seen.add(base);
        for (int i : new int[] {0, 1, 499, 999}) {
            ByteBuffer c = ByteBuffer.allocate(w.capacity()).order(ByteOrder.LITTLE_ENDIAN);
            c.put(w.duplicate());
            c.putInt(4 * i, Float.floatToRawIntBits(c.getFloat(4 * i)) ^ 1); // one ulp
            c.clear();
            long h = Checksum.fnv1a(c);
            assertNotEquals(base, h);
            seen.add(h);
        }
        assertEquals(5, seen.size());
        // -0.0 and 0.0 compare equal as floats but not as bits
        ByteBuffer z = ByteBuffer.allocate(4).putFloat(0, 0.0f);
        ByteBuffer nz = ByteBuffer.allocate(4).putFloat(0, -0.0f);
        assertNotEquals(Checksum.fnv1a(z), Checksum.fnv1a(nz));
    }
}
