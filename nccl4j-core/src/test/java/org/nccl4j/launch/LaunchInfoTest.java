package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.nccl4j.launch.LaunchInfo.Source;

class LaunchInfoTest {
    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    private static IllegalArgumentException invalid(String... kv) {
        return assertThrows(IllegalArgumentException.class, () -> LaunchInfo.detect(env(kv)));
    }

    @Test
    void portNumberTakesOneToFiveDigitsAndNothingElse() {
        assertEquals(29500, LaunchInfo.portNumber("29500"));
        assertEquals(80, LaunchInfo.portNumber(" 80 "));
        assertEquals(0, LaunchInfo.portNumber("0"));
        assertEquals(99999, LaunchInfo.portNumber("99999"));   // the range is the caller's
        for (String bad : new String[] {null, "", "  ", "123456", "-1", "+80", "8o", "80 81", "0x50", "٨٠"}) {
            assertEquals(-1, LaunchInfo.portNumber(bad), String.valueOf(bad));
        }
    }

    @Test
    void noLauncherIsASingleProcess() {
        LaunchInfo l = LaunchInfo.detect(env("PATH", "/usr/bin"));
        assertEquals(Source.SINGLE_PROCESS, l.source());
        assertEquals("single process", l.source().description());
        assertEquals(0, l.rank());
        assertEquals(1, l.worldSize());
        assertEquals(OptionalInt.of(0), l.localRank());
        assertEquals(OptionalInt.of(1), l.localWorldSize());
        assertEquals(0, l.device());
        assertEquals(Optional.of("local rank"), l.deviceOrigin());
        assertEquals(Optional.empty(), l.masterAddr());
        assertEquals(OptionalInt.empty(), l.masterPort());
        assertEquals("LaunchInfo[single process: rank 0 of 1, local 0 of 1, device 0 (local rank)]", l.toString());
    }

    @Test
    void openMpi() {
        LaunchInfo l = LaunchInfo.detect(env("OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8",
                "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
                "MASTER_ADDR", "node01", "MASTER_PORT", "29500"));
        assertEquals(Source.OPEN_MPI, l.source());
        assertEquals(5, l.rank());
        assertEquals(8, l.worldSize());
        assertEquals(OptionalInt.of(1), l.localRank());
        assertEquals(OptionalInt.of(4), l.localWorldSize());
        assertEquals(1, l.device());
        assertEquals(Optional.of("node01"), l.masterAddr());
        assertEquals(OptionalInt.of(29500), l.masterPort());
        assertEquals("LaunchInfo[Open MPI: rank 5 of 8, local 1 of 4, device 1 (local rank), master node01:29500]",
                l.toString());
    }

    @Test
    void openMpiBeatsSlurmAndTorchrunVariables() {
        LaunchInfo l = LaunchInfo.detect(env("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4",
                "SLURM_PROCID", "0", "SLURM_NTASKS", "1", "RANK", "3", "WORLD_SIZE", "9"));
        assertEquals(Source.OPEN_MPI, l.source());
        assertEquals(2, l.rank());
        assertEquals(4, l.worldSize());
        assertEquals(OptionalInt.empty(), l.localRank());
        assertFalse(l.hasDevice());
        IllegalStateException e = assertThrows(IllegalStateException.class, l::device);
        assertTrue(e.getMessage().contains("NCCL4J_DEVICE"), e.getMessage());
        assertEquals(3, l.withDevice(3).device());
        assertEquals(Optional.of("explicit"), l.withDevice(3).deviceOrigin());
    }

    @Test
    void pmixTakesSizeFromPmiOrOpenMpi() {
        LaunchInfo a = LaunchInfo.detect(env("PMIX_RANK", "3", "PMI_SIZE", "6", "SLURM_PROCID", "1",
                "SLURM_NTASKS", "6"));
        assertEquals(Source.PMIX, a.source());
        assertEquals(3, a.rank());
        assertEquals(6, a.worldSize());
        LaunchInfo b = LaunchInfo.detect(env("PMIX_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2",
                "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "2"));
        assertEquals(Source.PMIX, b.source());
        assertEquals(OptionalInt.of(1), b.localRank());
        assertEquals(OptionalInt.of(2), b.localWorldSize());
    }

    @Test
    void pmixWithoutSizeFallsThroughOrFails() {
        LaunchInfo l = LaunchInfo.detect(env("PMIX_RANK", "1", "SLURM_PROCID", "1", "SLURM_NTASKS", "2",
                "SLURM_LOCALID", "1"));
        assertEquals(Source.SLURM, l.source());
        assertEquals(1, l.rank());
        IllegalArgumentException e = invalid("PMIX_RANK", "3");
        assertTrue(e.getMessage().startsWith("PMIX_RANK=3 is set but no world size is"), e.getMessage());
    }

    @Test
    void pmiFromHydra() {
        LaunchInfo l = LaunchInfo.detect(env("PMI_RANK", "7", "PMI_SIZE", "16", "MPI_LOCALRANKID", "3",
                "MPI_LOCALNRANKS", "8"));
        assertEquals(Source.PMI, l.source());
        assertEquals(7, l.rank());
        assertEquals(16, l.worldSize());
        assertEquals(OptionalInt.of(3), l.localRank());
        assertEquals(OptionalInt.of(8), l.localWorldSize());
        assertEquals(3, l.device());
    }

    @Test
    void slurm() {
        LaunchInfo l = LaunchInfo.detect(env("SLURM_PROCID", "6", "SLURM_NTASKS", "8", "SLURM_LOCALID", "2",
                "SLURM_NTASKS_PER_NODE", "4", "RANK", "0", "WORLD_SIZE", "1"));
        assertEquals(Source.SLURM, l.source());
        assertEquals(6, l.rank());
        assertEquals(8, l.worldSize());
        assertEquals(OptionalInt.of(2), l.localRank());
        assertEquals(OptionalInt.of(4), l.localWorldSize());
        assertEquals(2, l.device());
    }

    @Test
    void slurmLocalSizeOnlyWhenUniform() {
        LaunchInfo uniform = LaunchInfo.detect(env("SLURM_PROCID", "1", "SLURM_NPROCS", "8", "SLURM_LOCALID", "1",
                "SLURM_TASKS_PER_NODE", "4(x2)"));
        assertEquals(8, uniform.worldSize());
        assertEquals(OptionalInt.of(4), uniform.localWorldSize());
        LaunchInfo mixed = LaunchInfo.detect(env("SLURM_PROCID", "1", "SLURM_NTASKS", "7", "SLURM_LOCALID", "1",
                "SLURM_TASKS_PER_NODE", "4,3"));
        assertEquals(OptionalInt.empty(), mixed.localWorldSize());
        assertEquals(1, mixed.device());
        IllegalArgumentException e = invalid("SLURM_PROCID", "0");
        assertTrue(e.getMessage().contains("SLURM_PROCID=0 is set but SLURM_NTASKS is not"), e.getMessage());
    }

    @Test
    void torchrunStyle() {
        LaunchInfo l = LaunchInfo.detect(env("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1",
                "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "1234"));
        assertEquals(Source.TORCHRUN, l.source());
        assertEquals(3, l.rank());
        assertEquals(OptionalInt.of(1), l.localRank());
        assertEquals(OptionalInt.of(2), l.localWorldSize());
        assertEquals(Optional.of("10.0.0.1"), l.masterAddr());
        assertEquals(OptionalInt.of(1234), l.masterPort());
    }

    @Test
    void torchrunAgentBeatsTheOuterLauncher() {
        // torchrun started by srun: SLURM_* describe the agent (one per node), RANK the worker.
        LaunchInfo l = LaunchInfo.detect(env("TORCHELASTIC_RUN_ID", "job42", "RANK", "5", "WORLD_SIZE", "8",
                "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "SLURM_PROCID", "1", "SLURM_NTASKS", "2",
                "SLURM_LOCALID", "0"));
        assertEquals(Source.TORCHRUN, l.source());
        assertEquals(5, l.rank());
        assertEquals(8, l.worldSize());
        assertEquals(1, l.device());
    }

    @Test
    void deviceOverride() {
        LaunchInfo l = LaunchInfo.detect(env("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1", "NCCL4J_DEVICE", "0"));
        assertEquals(0, l.device());
        assertEquals(Optional.of("NCCL4J_DEVICE"), l.deviceOrigin());
        assertEquals(OptionalInt.of(1), l.localRank());
        assertTrue(invalid("NCCL4J_DEVICE", "gpu0").getMessage().contains("NCCL4J_DEVICE=\"gpu0\" is not an integer"));
        assertTrue(invalid("NCCL4J_DEVICE", "-1").getMessage().contains("NCCL4J_DEVICE=-1 is negative"));
        assertThrows(IllegalArgumentException.class, () -> l.withDevice(-1));
    }

    @Test
    void moreLocalRanksThanDevicesShareThemRoundRobin() {
        int[] asked = {0};
        java.util.function.IntSupplier one = () -> {
            asked[0]++;
            return 1;
        };
        LaunchInfo l = LaunchInfo.detect(env("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3", "LOCAL_WORLD_SIZE", "4"),
                () -> 2);
        assertEquals(1, l.device());
        assertEquals(OptionalInt.of(3), l.localRank());
        assertEquals(Optional.of("local rank mod device count"), l.deviceOrigin());
        assertEquals("LaunchInfo[torchrun: rank 3 of 4, local 3 of 4, device 1 (local rank 3 mod 2 devices)]",
                l.toString());
        assertEquals(0, LaunchInfo.detect(env("RANK", "2", "WORLD_SIZE", "4", "LOCAL_RANK", "2"), () -> 2).device());
        LaunchInfo mpi = LaunchInfo.detect(env("OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8",
                "OMPI_COMM_WORLD_LOCAL_RANK", "5"), one);
        assertEquals(0, mpi.device());
        assertEquals("LaunchInfo[Open MPI: rank 5 of 8, local 5 of ?, device 0 (local rank 5 mod 1 device)]",
                mpi.toString());
        assertEquals(1, asked[0]);
        // enough devices: the local rank as it is, and the origin says so
        l = LaunchInfo.detect(env("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1"), () -> 8);
        assertEquals(1, l.device());
        assertEquals(Optional.of("local rank"), l.deviceOrigin());
        // local rank 0 and NCCL4J_DEVICE never ask CUDA
        LaunchInfo.detect(env("RANK", "0", "WORLD_SIZE", "2", "LOCAL_RANK", "0"), one);
        l = LaunchInfo.detect(env("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3", "NCCL4J_DEVICE", "2"), one);
        assertEquals(2, l.device());
        assertEquals(Optional.of("NCCL4J_DEVICE"), l.deviceOrigin());
        assertEquals(1, asked[0]);
    }

    @Test
    void noCountFromCudaLeavesTheLocalRankAsItIs() {
        Map<String, String> e = env("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3");
        assertEquals(3, LaunchInfo.detect(e).device());
        assertEquals(3, LaunchInfo.detect(e, null).device());
        assertEquals(3, LaunchInfo.detect(e, () -> 0).device());
        LaunchInfo l = LaunchInfo.detect(e, () -> {
            throw new IllegalStateException("The CUDA runtime could not be loaded");
        });
        assertEquals(3, l.device());
        assertEquals(Optional.of("local rank"), l.deviceOrigin());
    }

    @Test
    void malformedValuesNameTheVariable() {
        IllegalArgumentException e = invalid("OMPI_COMM_WORLD_RANK", "two", "OMPI_COMM_WORLD_SIZE", "4");
        assertEquals("OMPI_COMM_WORLD_RANK=\"two\" is not an integer: check how the launcher sets"
                + " OMPI_COMM_WORLD_RANK", e.getMessage());
        e = invalid("RANK", "-1", "WORLD_SIZE", "4");
        assertTrue(e.getMessage().startsWith("RANK=-1 is negative"), e.getMessage());
        e = invalid("RANK", "4", "WORLD_SIZE", "4");
        assertEquals("RANK=4 is not below WORLD_SIZE=4: ranks run from 0 to 3", e.getMessage());
        e = invalid("RANK", "0", "WORLD_SIZE", "0");
        assertTrue(e.getMessage().startsWith("WORLD_SIZE=0 is less than 1"), e.getMessage());
        e = invalid("RANK", "1", "WORLD_SIZE", "4", "LOCAL_RANK", "2", "LOCAL_WORLD_SIZE", "2");
        assertTrue(e.getMessage().startsWith("LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"), e.getMessage());
        e = invalid("RANK", "1", "WORLD_SIZE", "4", "LOCAL_WORLD_SIZE", "5");
        assertTrue(e.getMessage().startsWith("LOCAL_WORLD_SIZE=5 is greater than WORLD_SIZE=4"), e.getMessage());
        e = invalid("RANK", "1");
        assertTrue(e.getMessage().contains("RANK=1 is set but WORLD_SIZE is not"), e.getMessage());
        e = invalid("PMI_RANK", "1", "PMI_SIZE", "2", "MPI_LOCALRANKID", "x");
        assertTrue(e.getMessage().startsWith("MPI_LOCALRANKID=\"x\""), e.getMessage());
        e = invalid("RANK", "1", "WORLD_SIZE", "99999999999");
        assertTrue(e.getMessage().startsWith("WORLD_SIZE=\"99999999999\" is not an integer"), e.getMessage());
    }

    @Test
    void masterPortIsChecked() {
        assertTrue(invalid("MASTER_PORT", "70000").getMessage().contains("MASTER_PORT=70000 is above 65535"));
        assertTrue(invalid("MASTER_PORT", "0").getMessage().startsWith("MASTER_PORT=0 is less than 1"));
        assertTrue(invalid("MASTER_PORT", "http").getMessage().startsWith("MASTER_PORT=\"http\""));
        assertEquals(Optional.of("h"), LaunchInfo.detect(env("MASTER_ADDR", "h")).masterAddr());
    }

    @Test
    void detectUsesTheJvmEnvironment() {
        LaunchInfo fromJvm = LaunchInfo.detect();
        LaunchInfo fromMap = LaunchInfo.detect(System.getenv());
        assertEquals(fromMap.toString(), fromJvm.toString());
    }
}
