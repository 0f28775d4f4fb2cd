package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The GPU count and the placement of ranks on GPUs, without starting anything. */
class GpuSharingTest {
    @TempDir
    Path proc;

    @Test
    void cudaVisibleDevicesIsReadAsCudaReadsIt() {
        assertEquals(0, GpuSharing.visibleEntries(""));
        assertEquals(0, GpuSharing.visibleEntries(" "));
        assertEquals(1, GpuSharing.visibleEntries("0"));
        assertEquals(3, GpuSharing.visibleEntries("0, 2,3"));
        assertEquals(2, GpuSharing.visibleEntries("GPU-8f2c,MIG-1a"));
        assertEquals(1, GpuSharing.visibleEntries("1,-1,2"), "an invalid entry ends the list");
        assertEquals(0, GpuSharing.visibleEntries("-1"));
        assertEquals(2, GpuSharing.visibleEntries("0,1,"), "an empty entry ends the list");
    }

    @Test
    void theCountComesFromCudaVisibleDevicesThenProc() throws Exception {
        Files.createDirectories(proc.resolve("driver/nvidia/gpus/0000:19:00.0"));
        Files.createDirectories(proc.resolve("driver/nvidia/gpus/0000:3b:00.0"));
        assertEquals(new GpuSharing.Count(2, proc.resolve("driver/nvidia/gpus").toString()),
                GpuSharing.count(Map.of(), proc));
        assertEquals(new GpuSharing.Count(1, "CUDA_VISIBLE_DEVICES=1"),
                GpuSharing.count(Map.of("CUDA_VISIBLE_DEVICES", "1"), proc));
    }

    @Test
    void sharingAddsDeviceHostIdAndInterfaceUnlessSet() {
        GpuSharing s = GpuSharing.plan(3, true, new GpuSharing.Count(2, "test"), Map.of("NCCL_SOCKET_IFNAME", "ib0"));
        assertTrue(s.sharing());
        Map<String, String> rank2 = new HashMap<>();
        s.addTo(2, rank2);
        assertEquals(Map.of("NCCL4J_DEVICE", "0", "NCCL_HOSTID", "nccl4j-host2"), rank2);
        Map<String, String> rank1 = new HashMap<>();
        s.addTo(1, rank1);
        assertEquals(Map.of("NCCL4J_DEVICE", "1", "NCCL_HOSTID", "nccl4j-host1"), rank1);
        assertEquals(List.of("3 ranks share 2 GPUs (rank r on device r mod 2, NCCL_HOSTID=nccl4j-host<r>,"
                + " NCCL_SOCKET_IFNAME=ib0): for development and tests; ranks talk over sockets, not NVLink"), s.notices());
    }

    @Test
    void noSharingAddsNothing() {
        GpuSharing s = GpuSharing.plan(2, false, new GpuSharing.Count(0, "none"), Map.of());
        assertFalse(s.sharing());
        Map<String, String> e = new HashMap<>();
        s.addTo(1, e);
        assertEquals(Map.of(), e);
        assertEquals(List.of(), s.notices());
        // 64 per GPU is allowed, 65 is not
        assertTrue(GpuSharing.plan(64, true, new GpuSharing.Count(1, "t"), Map.of()).sharing());
        GpuSharing.Refusal r = assertThrows(GpuSharing.Refusal.class,
                () -> GpuSharing.plan(3, false, new GpuSharing.Count(2, "t"), Map.of()));
        assertEquals("-np 3 is more than the 2 GPUs found (t): add --share-gpu to run several ranks on one GPU (for"
                + " development and tests), or use -np 2 or less", r.getMessage());
    }
}
