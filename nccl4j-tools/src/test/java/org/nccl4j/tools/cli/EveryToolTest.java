package org.nccl4j.tools.cli;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.examples.Args;
import picocli.CommandLine;

/**
 * Every program a user runs answers {@code --help} with the same layout and {@code --version} with nccl4j's and the
 * loaded NCCL's versions, and refuses a bad option in one line naming it (the tools with their own tests:
 * nccl4j-perf, nccl4j-run, nccl4j-trace, nccl4j-doctor; here the harnesses' mains and Plot; the examples' in
 * nccl4j-examples' ExampleOptionsTest).
 */
class EveryToolTest {
    /** The options objects of the harnesses' mains and Plot's, by their command name. */
    private static List<Object> examples() throws Exception {
        String[] classes = {"org.nccl4j.tools.harness.HangScenarios$Options",
            "org.nccl4j.tools.harness.NcclLogCheck$Options", "org.nccl4j.tools.harness.MetricsCost$Options",
            "org.nccl4j.tools.harness.FingerprintCost$Options", "org.nccl4j.tools.perf.Plot$Options",
            "org.nccl4j.tools.harness.DepartureScenarios$Options"};
        List<Object> out = new java.util.ArrayList<>();
        for (String c : classes) {
            java.lang.reflect.Constructor<?> k = Class.forName(c).getDeclaredConstructor();
            k.setAccessible(true);
            out.add(k.newInstance());
        }
        return out;
    }

    @Test
    void eachAnswersHelpAndVersionAndRefusesABadOptionNamingIt() throws Exception {
        for (Object o : examples()) {
            CommandLine cl = new CommandLine(o);
            String name = cl.getCommandName();
            assertTrue(cl.getUsageMessage().startsWith("Usage: " + name + " [-hV]"), cl.getUsageMessage());
            assertTrue(cl.getUsageMessage().contains("-V, --version"), name);
            StringWriter v = new StringWriter();
            cl.printVersionHelp(new PrintWriter(v, true));
            String[] lines = v.toString().split("\n");
            assertTrue(lines[0].startsWith(name + " (nccl4j "), v.toString());
            assertTrue(lines[1].startsWith("NCCL "), v.toString());
            // skip is a scenario of both HangScenarios and DepartureScenarios
            String[] args = name.equals("HangScenarios") || name.equals("DepartureScenarios")
                    ? new String[] {"skip", "--frobnicate"}
                    : name.equals("Plot") ? new String[] {"out.png", "r.json", "--frobnicate"}
                    : new String[] {"--frobnicate"};   // the required parameters given, the option is what is wrong
            Args.UsageException e = assertThrows(Args.UsageException.class, () -> Args.parse(o, args), name);
            assertTrue(e.getMessage().contains("'--frobnicate'") && e.getMessage().endsWith("try '" + name
                    + " --help'") && !e.getMessage().contains("\n"), e.getMessage());
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
