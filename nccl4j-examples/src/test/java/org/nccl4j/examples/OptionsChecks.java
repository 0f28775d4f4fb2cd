package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/**
 * The check every example's options get (ExampleOptionsTest; the tools' and harnesses' have theirs in nccl4j-tools'
 * EveryToolTest): {@code --help} in the common layout, {@code --version} with nccl4j's and the loaded
 * NCCL's versions, and a bad option refused in one line that names it and points at {@code --help} ({@link Args}).
 */
public final class OptionsChecks {
    private OptionsChecks() {
    }

    /**
     * Makes the options objects of programs' mains with their private no-argument constructors.
     *
     * @param classes the options classes' binary names
     * @return one new instance of each, in order
     * @throws ReflectiveOperationException when a class or its constructor is missing
     */
    public static List<Object> instances(String... classes) throws ReflectiveOperationException {
        List<Object> out = new ArrayList<>();
        for (String c : classes) {
            java.lang.reflect.Constructor<?> k = Class.forName(c).getDeclaredConstructor();
            k.setAccessible(true);
            out.add(k.newInstance());
        }
        return out;
    }

    /**
     * Checks one program's options.
     *
     * @param options the options object
     * @param badLine a command line whose only fault is the option {@code --frobnicate} (with the program's required
     *     parameters, if it has any)
     */
    public static void answersHelpVersionAndRefuses(Object options, String... badLine) {
        CommandLine cl = new CommandLine(options);
        String name = cl.getCommandName();
        assertTrue(cl.getUsageMessage().startsWith("Usage: " + name + " [-hV]"), cl.getUsageMessage());
        assertTrue(cl.getUsageMessage().contains("-V, --version"), name);
        StringWriter v = new StringWriter();
        cl.printVersionHelp(new PrintWriter(v, true));
        String[] lines = v.toString().split("\n");
        assertTrue(lines[0].startsWith(name + " (nccl4j "), v.toString());
        assertTrue(lines[1].startsWith("NCCL "), v.toString());
        Args.UsageException e = assertThrows(Args.UsageException.class, () -> Args.parse(options, badLine), name);
        assertTrue(e.getMessage().contains("'--frobnicate'") && e.getMessage().endsWith("try '" + name
                + " --help'") && !e.getMessage().contains("\n"), e.getMessage());
    }
}
