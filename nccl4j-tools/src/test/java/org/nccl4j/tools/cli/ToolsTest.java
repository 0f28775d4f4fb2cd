package org.nccl4j.tools.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The house conventions that {@link Tools} keeps around picocli: every command line reaches picocli through
 * {@link Tools#parseArgs} (a refusal is a {@link Tools.UsageException} with picocli's message) or
 * {@link Tools#execute}, and a refused command line is printed alike by every tool ({@link Tools#refuse}).
 */
class ToolsTest {
    /** A tool's options, as a tool declares them. */
    @Command(name = "sometool", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class)
    static final class Options implements Runnable {
        @Option(names = "--steps", paramLabel = "N")
        int steps = 8;

        @Override
        public void run() {
        }
    }

    @Test
    void parseArgsFillsTheOptionsAndRefusesWithPicocliMessageAlone() {
        Options o = new Options();
        CommandLine cl = new CommandLine(o);
        assertSame(cl, Tools.parseArgs(cl, "--steps", "3"));
        assertEquals(3, o.steps);
        assertFalse(cl.isUsageHelpRequested());
        assertTrue(Tools.parseArgs(new CommandLine(new Options()), "--help").isUsageHelpRequested());
        Tools.UsageException e = assertThrows(Tools.UsageException.class,
                () -> Tools.parseArgs(new CommandLine(new Options()), "--frobnicate"));
        assertEquals("Unknown option: '--frobnicate'", e.getMessage());
        e = assertThrows(Tools.UsageException.class,
                () -> Tools.parseArgs(new CommandLine(new Options()), "--steps", "many"));
        assertEquals("Invalid value for option '--steps': 'many' is not an int", e.getMessage());
    }

    @Test
    void parseNamesTheToolsHelpAfterTheMessage() {
        Tools.UsageException e = assertThrows(Tools.UsageException.class,
                () -> Tools.parse(new Options(), "--frobnicate"));
        assertEquals("Unknown option: '--frobnicate'; try 'sometool --help'", e.getMessage());
        assertEquals(5, Tools.parse(new Options(), "--steps=5").steps);
    }

    @Test
    void executeRefusesABadOptionInTheTwoLinesOfRefuseWithStatusTwo() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = Tools.execute(new Options(), new String[] {"--frobnicate"}, new PrintWriter(out),
                new PrintWriter(err));
        assertEquals(Tools.USAGE, status);
        assertEquals(2, status);
        assertEquals("", out.toString());
        StringWriter refused = new StringWriter();
        Tools.refuse(new PrintWriter(refused), "sometool", "Unknown option: '--frobnicate'");
        assertEquals("sometool: Unknown option: '--frobnicate'\nTry 'sometool --help' for the options.\n",
                refused.toString().replace(System.lineSeparator(), "\n"));
        assertEquals(refused.toString(), err.toString());
    }

    @Test
    void versionTextIsWhatVersionPrints() {
        StringWriter out = new StringWriter();
        assertEquals(0, Tools.execute(new Options(), new String[] {"--version"}, new PrintWriter(out),
                new PrintWriter(new StringWriter())));
        String text = Tools.versionText(new Options());
        assertEquals(out.toString().stripTrailing(), text);
        String[] lines = text.split("\n");
        assertEquals(3, lines.length, text);
        assertEquals("sometool (nccl4j " + Tools.nccl4jVersion() + ")", lines[0]);
        assertTrue(lines[1].startsWith("NCCL "), text);
        assertTrue(lines[2].startsWith("Java " + Runtime.version() + " ("), text);
    }

    @Test
    void noOtherMainSourceHandsACommandLineToPicocli() throws IOException {
        Path main = Path.of("src/main/java");
        assertTrue(Files.isDirectory(main), main.toAbsolutePath().toString());
        List<String> found = new ArrayList<>();
        int files = 0;
        try (Stream<Path> all = Files.walk(main)) {
            for (Path f : (Iterable<Path>) all.filter(p -> p.toString().endsWith(".java"))::iterator) {
                files++;
                if (f.endsWith(Path.of("org/nccl4j/tools/cli/Tools.java"))) {
                    continue;
                }
                String text = Files.readString(f);
                for (String call : new String[] {"ParameterException", "setParameterExceptionHandler"}) {
                    if (text.contains(call)) {
                        found.add(f + ": " + call);
                    }
                }
                if (text.replace("Tools.parseArgs(", "").contains(".parseArgs(")) {
                    found.add(f + ": parseArgs");
                }
            }
        }
        assertTrue(files >= 40, "only " + files + " main sources under " + main.toAbsolutePath());
        assertEquals(List.of(), found, "parse through Tools.parseArgs, Tools.parse or Tools.execute");
    }
}
