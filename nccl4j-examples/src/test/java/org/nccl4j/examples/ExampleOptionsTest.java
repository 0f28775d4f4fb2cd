package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every example a user runs answers {@code --help} with the same layout and {@code --version} with nccl4j's and the
 * loaded NCCL's versions, and refuses a bad option in one line naming it ({@link Args}; the tools' and the
 * harnesses' own are nccl4j-tools' EveryToolTest).
 */
class ExampleOptionsTest {
    /** The options objects of the examples' mains, by their command name. */
    private static List<Object> examples() throws Exception {
        String[] classes = {"org.nccl4j.examples.AllReduce$Options", "org.nccl4j.examples.DdpSimple$Options",
            "org.nccl4j.examples.ZeroShards$Options", "org.nccl4j.examples.ElasticDdp$Options",
            "org.nccl4j.examples.SlowRank$Options", "org.nccl4j.examples.MetricsExample$Options",
            "org.nccl4j.examples.DdpOptions"};
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
            String[] args = {"--frobnicate"};
            Args.UsageException e = assertThrows(Args.UsageException.class, () -> Args.parse(o, args), name);
            assertTrue(e.getMessage().contains("'--frobnicate'") && e.getMessage().endsWith("try '" + name
                    + " --help'") && !e.getMessage().contains("\n"), e.getMessage());
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
