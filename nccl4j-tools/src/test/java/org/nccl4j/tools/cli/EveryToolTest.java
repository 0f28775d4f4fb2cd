package org.nccl4j.tools.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every program a user runs answers {@code --help} with the same layout and {@code --version} with nccl4j's and the
 * loaded NCCL's versions, and refuses a bad option in one line naming it (the tools with their own tests:
 * nccl4j-perf, nccl4j-run, nccl4j-trace, nccl4j-doctor; here the harnesses' mains and Plot, parsed by
 * {@link Tools#parse}; the examples' in nccl4j-examples' ExampleOptionsTest, parsed by their own {@code Args}).
 */
class EveryToolTest {
    /** The options objects of the harnesses' mains and Plot's. */
    private static List<Object> programs() throws Exception {
        List<Object> out = new ArrayList<>();
        for (String c : List.of("org.nccl4j.tools.harness.HangScenarios$Options",
                "org.nccl4j.tools.harness.NcclLogCheck$Options", "org.nccl4j.tools.harness.MetricsCost$Options",
                "org.nccl4j.tools.harness.FingerprintCost$Options", "org.nccl4j.tools.perf.Plot$Options",
                "org.nccl4j.tools.harness.DepartureScenarios$Options")) {
            Constructor<?> k = Class.forName(c).getDeclaredConstructor();
            k.setAccessible(true);
            out.add(k.newInstance());
        }
        return out;
    }

    @Test
    void eachAnswersHelpAndVersionAndRefusesABadOptionNamingIt() throws Exception {
        List<String> names = new ArrayList<>();
        for (Object o : programs()) {
            CommandLine cl = new CommandLine(o);
            String name = cl.getCommandName();
            names.add(name);
            // the required parameters given, the option is what is wrong; skip is a scenario of both harnesses
            String[] args = name.equals("HangScenarios") || name.equals("DepartureScenarios")
                    ? new String[] {"skip", "--frobnicate"}
                    : name.equals("Plot") ? new String[] {"out.png", "r.json", "--frobnicate"}
                    : new String[] {"--frobnicate"};
            assertTrue(cl.getUsageMessage().startsWith("Usage: " + name + " [-hV]"), cl.getUsageMessage());
            assertTrue(cl.getUsageMessage().contains("-V, --version"), name);
            StringWriter v = new StringWriter();
            cl.printVersionHelp(new PrintWriter(v, true));
            String[] lines = v.toString().split("\n");
            assertEquals(name + " (nccl4j " + Tools.nccl4jVersion() + ")", lines[0], v.toString());
            assertTrue(lines[1].startsWith("NCCL "), v.toString());
            assertTrue(lines[2].startsWith("Java " + Runtime.version()), v.toString());
            Tools.UsageException e = assertThrows(Tools.UsageException.class, () -> Tools.parse(o, args), name);
            assertEquals("Unknown option: '--frobnicate'; try '" + name + " --help'", e.getMessage());
        }
        assertEquals(List.of("HangScenarios", "NcclLogCheck", "MetricsCost", "FingerprintCost", "Plot",
                "DepartureScenarios"), names);
    }

    @Test
    void valuesAreConvertedAndBadOnesNamed() throws Exception {
        Object hang = programs().get(0);
        Tools.UsageException e = assertThrows(Tools.UsageException.class, () -> Tools.parse(hang, "dance"));
        assertTrue(e.getMessage().startsWith("Invalid value for positional parameter at index 0 (SCENARIO): expected "
                + "one of [skip, kill, stop, sendrecv, init, halfcount, cost]"), e.getMessage());
    }
}
