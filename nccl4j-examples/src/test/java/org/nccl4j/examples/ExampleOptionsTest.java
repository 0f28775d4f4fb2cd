package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every example a user runs answers {@code --help} with the same layout and {@code --version} with nccl4j's and the
 * loaded NCCL's versions, and refuses a bad option in one line naming it ({@link Args}; the tools' and the
 * harnesses' own are nccl4j-tools' EveryToolTest).
 */
class ExampleOptionsTest {
    /** The options objects of the examples' mains. */
    private static List<Object> examples() throws Exception {
        return OptionsChecks.instances("org.nccl4j.examples.AllReduce$Options",
                "org.nccl4j.examples.DdpSimple$Options", "org.nccl4j.examples.ZeroShards$Options", "org.nccl4j.examples.ElasticDdp$Options",
                "org.nccl4j.examples.SlowRank$Options", "org.nccl4j.examples.MetricsExample$Options",
                "org.nccl4j.examples.DdpOptions", "org.nccl4j.examples.ShardedTraining$Options");
    }

    @Test
    void eachAnswersHelpAndVersionAndRefusesABadOptionNamingIt() throws Exception {
        for (Object o : examples()) {
            OptionsChecks.answersHelpVersionAndRefuses(o, "--frobnicate");
        }
    }

    @Test
    void valuesAreConvertedAndBadOnesNamed() throws Exception {
        Object zero = examples().get(2);
        Args.UsageException e = assertThrows(Args.UsageException.class, () -> Args.parse(zero, "--average",
                "mean"));
        assertEquals("Invalid value for option '--average': 'mean' is not one of host, premul, avg; try 'ZeroShards "
                + "--help'", e.getMessage());
        Object ddp = examples().get(1);
        e = assertThrows(Args.UsageException.class, () -> Args.parse(ddp, "--lr", "fast"));
        assertTrue(e.getMessage().startsWith("Invalid value for option '--lr': 'fast' is not a float"),
                e.getMessage());
    }
}
