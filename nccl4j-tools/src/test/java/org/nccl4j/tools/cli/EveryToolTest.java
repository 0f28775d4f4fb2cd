package org.nccl4j.tools.cli;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.examples.Args;
import org.nccl4j.examples.OptionsChecks;

/**
 * Every program a user runs answers {@code --help} with the same layout and {@code --version} with nccl4j's and the
 * loaded NCCL's versions, and refuses a bad option in one line naming it (the tools with their own tests:
 * nccl4j-perf, nccl4j-run, nccl4j-trace, nccl4j-doctor; here the harnesses' mains and Plot; the examples' in
 * nccl4j-examples' ExampleOptionsTest).
 */
class EveryToolTest {
    /** The options objects of the harnesses' mains and Plot's. */
    private static List<Object> examples() throws Exception {
        return OptionsChecks.instances("org.nccl4j.tools.harness.HangScenarios$Options",
                "org.nccl4j.tools.harness.NcclLogCheck$Options", "org.nccl4j.tools.harness.MetricsCost$Options",
                "org.nccl4j.tools.harness.FingerprintCost$Options", "org.nccl4j.tools.perf.Plot$Options",
                "org.nccl4j.tools.harness.DepartureScenarios$Options");
    }

    @Test
    void eachAnswersHelpAndVersionAndRefusesABadOptionNamingIt() throws Exception {
        for (Object o : examples()) {
            String name = new picocli.CommandLine(o).getCommandName();
            // the required parameters given, the option is what is wrong; skip is a scenario of both harnesses
            String[] args = name.equals("HangScenarios") || name.equals("DepartureScenarios")
                    ? new String[] {"skip", "--frobnicate"}
                    : name.equals("Plot") ? new String[] {"out.png", "r.json", "--frobnicate"}
                    : new String[] {"--frobnicate"};
            OptionsChecks.answersHelpVersionAndRefuses(o, args);
        }
    }

    @Test
    void valuesAreConvertedAndBadOnesNamed() throws Exception {
        Object hang = examples().get(0);
        Args.UsageException e = assertThrows(Args.UsageException.class, () -> Args.parse(hang, "dance"));
        assertTrue(e.getMessage().startsWith("Invalid value for positional parameter at index 0 (SCENARIO): expected "
                + "one of [skip, kill, stop, sendrecv, init, halfcount, cost]"), e.getMessage());
    }
}
