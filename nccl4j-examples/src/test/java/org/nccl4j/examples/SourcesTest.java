package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The library's own sources as a reader meets them: no line of src/main in any module is wider than 120 columns. */
class SourcesTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final int WIDTH = 120;

    @Test
    void noMainSourceLineIsWiderThan120Columns() throws IOException {
        List<String> wide = new ArrayList<>();
        int files = 0;
        for (String module : ModulesTest.MODULES) {
            try (Stream<Path> s = Files.walk(ROOT.resolve(module).resolve("src/main"))) {
                for (Path p : s.filter(f -> f.toString().matches(".*\\.(java|h|c)$")).sorted().toList()) {
                    files++;
                    List<String> lines = Files.readAllLines(p);
                    for (int i = 0; i < lines.size(); i++) {
                        if (lines.get(i).length() > WIDTH) {
                            wide.add(ROOT.relativize(p) + ":" + (i + 1) + " (" + lines.get(i).length() + " columns)");
                        }
                    }
                }
            }
        }
        assertTrue(files > 100, "read " + files + " source files under " + ROOT);
        assertEquals(List.of(), wide, "wrap these lines at " + WIDTH + " columns");
    }
}
