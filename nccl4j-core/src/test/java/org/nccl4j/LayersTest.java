package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The packages' imports go one way: {@code org.nccl4j.launch} and {@code org.nccl4j.trace} use nothing of the rest
 * of the core (Javadoc may link to it), so the core can be read from the bottom up. {@code org.nccl4j.diagnostics}
 * can reach only the public API, which the compiler sees to.
 */
class LayersTest {
    private static final Path SOURCES = Path.of("src/main/java/org/nccl4j");
    /** A type of the root package, or of diagnostics, named in code: import lines and qualified names. */
    private static final Pattern CORE = Pattern.compile("\\borg\\.nccl4j\\.(?:diagnostics\\.)?[A-Z]");

    @Test
    void launchAndTraceUseNothingOfTheRestOfTheCore() throws IOException {
        List<String> found = new ArrayList<>();
        int files = 0;
        for (String pkg : List.of("launch", "trace")) {
            try (Stream<Path> s = Files.list(SOURCES.resolve(pkg))) {
                for (Path f : s.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                    files++;
                    List<String> lines = Files.readAllLines(f);
                    for (int i = 0; i < lines.size(); i++) {
                        String code = lines.get(i).strip();
                        if (!code.startsWith("*") && !code.startsWith("/*") && !code.startsWith("//")
                                && CORE.matcher(code).find()) {
                            found.add(pkg + "/" + f.getFileName() + ":" + (i + 1) + ": " + code);
                        }
                    }
                }
            }
        }
        assertTrue(files >= 15, "read " + files + " files under " + SOURCES.toAbsolutePath());
        assertEquals(List.of(), found, "launch and trace must not use the packages above them");
    }
}
