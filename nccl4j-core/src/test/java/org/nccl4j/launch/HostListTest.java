package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Slurm's host lists, as {@code scontrol show hostnames} expands them. */
class HostListTest {
    private static final String V = "SLURM_JOB_NODELIST";

    private static void expands(String list, String... hosts) {
        assertEquals(List.of(hosts), HostList.expand(V, list), list);
        assertEquals(hosts[0], HostList.first(V, list), list);
        assertEquals(hosts.length, HostList.count(V, list), list);
    }

    private static void refused(String list, String what) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HostList.first(V, list));
        assertEquals(V + "=\"" + list + "\" is not a Slurm host list: " + what, e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> HostList.expand(V, list));
    }

    @Test
    void rangesAndSingles() {
        expands("gpu[01-04,07]", "gpu01", "gpu02", "gpu03", "gpu04", "gpu07");
        expands("gpu01,gpu02", "gpu01", "gpu02");
        expands("a[1-2],b[3,5-6]", "a1", "a2", "b3", "b5", "b6");
        expands("node7", "node7");
        expands("[3-4]", "3", "4");
    }

    @Test
    void zeroPaddingIsTheLowBoundsWidth() {
        expands("node-[001-010]", "node-001", "node-002", "node-003", "node-004", "node-005", "node-006", "node-007",
                "node-008", "node-009", "node-010");
        expands("n[8-10]", "n8", "n9", "n10");
        expands("n[098-101]", "n098", "n099", "n100", "n101");
        expands("n[1-010]", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10");
        expands("n[0]", "n0");
    }

    @Test
    void severalBracketsGiveEveryCombinationFirstBracketSlowest() {
        expands("rack[1-2]-gpu[1-4]", "rack1-gpu1", "rack1-gpu2", "rack1-gpu3", "rack1-gpu4", "rack2-gpu1",
                "rack2-gpu2", "rack2-gpu3", "rack2-gpu4");
        expands("r[0-1]n[08,10]", "r0n08", "r0n10", "r1n08", "r1n10");
        expands("node[1-2]-ib", "node1-ib", "node2-ib");
    }

    @Test
    void separatorsAreCommasAndWhiteSpace() {
        expands("a1 b[2-3]", "a1", "b2", "b3");
        expands(" a1,\tb2 ", "a1", "b2");
        expands("a1, b2", "a1", "b2");
    }

    @Test
    void malformedListsSayWhatIsWrong() {
        refused("", "it is empty");
        refused("  ", "it is empty");
        refused("gpu[01-04", "the bracket opened at position 3 is not closed");
        refused("gpu01]", "']' at position 5 closes no bracket");
        refused("gpu[1-[2]]", "'[' at position 6 inside the bracket opened at position 3");
        refused("gpu[]", "the brackets at position 3 are empty");
        refused("gpu[1,,2]", "an empty range at position 6");
        refused("gpu[1,]", "an empty range at position 6");
        refused("gpu[4-1]", "the range \"4-1\" at position 4 runs down: its low bound is above its high bound");
        refused("gpu[a-b]", "\"a\" at position 4 is not a number (ranges are digits, lo-hi, separated by commas)");
        refused("gpu[1-]", "a range bound is missing at position 6");
        refused("gpu[-3]", "a range bound is missing at position 4");
        refused("gpu[1--3]", "\"-3\" at position 6 is not a number (ranges are digits, lo-hi, separated by commas)");
        refused("gpu[1 -3]", "white space at position 5 inside the bracket opened at position 3");
        refused("bgl[000x133]", "\"000x133\" at position 4 is Slurm's 3-D box form, which is not read here");
        refused("a,,b", "an empty host name before the comma at position 2");
        refused(",a", "an empty host name before the comma at position 0");
        refused("a,", "it ends with a comma, after which a host name is missing");
        refused("n[1234567890123456789]", "\"1234567890123456789\" at position 2 has more than 18 digits");
    }

    @Test
    void expansionIsBoundedAndTheFirstHostIsCheap() {
        String huge = "n[0-999999]x[0-999999]";
        assertEquals("n0x0", HostList.first(V, huge));
        assertEquals(1_000_000_000_000L, HostList.count(V, huge));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HostList.expand(V, huge));
        assertEquals(V + "=\"" + huge + "\" names 1000000000000 hosts, more than the 100000 a host list may expand to"
                + " here: check how it is set", e.getMessage());
        assertEquals(100_000, HostList.expand(V, "n[1-100000]").size());
        assertThrows(IllegalArgumentException.class, () -> HostList.expand(V, "n[1-100000],m1"));
        String overflow = "a[0-999999999999999999]b[0-999999999999999999]";
        assertEquals(Long.MAX_VALUE, HostList.count(V, overflow));
        e = assertThrows(IllegalArgumentException.class, () -> HostList.expand(V, overflow));
        assertEquals(V + "=\"" + overflow + "\" names more than " + Long.MAX_VALUE + " hosts, more than the 100000 a"
                + " host list may expand to here: check how it is set", e.getMessage());
    }
}
