package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** README.md's "A program" and ReadmeSum.java must stay the same program (ReadmeSum is what CI compiles). */
class ReadmeSumTest {
    @Test
    void readmeProgramIsReadmeSum() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        int section = readme.indexOf("## A program");
        assertTrue(section >= 0, "README.md has no \"## A program\" section");
        int start = readme.indexOf("```java\n", section) + "```java\n".length();
        int end = readme.indexOf("```", start);
        String program = readme.substring(start, end);
        String source = Files.readString(Path.of("src/main/java/org/nccl4j/examples/ReadmeSum.java"));
        String body = source.substring(source.indexOf("import org.nccl4j.*;"))
                .replace("public class ReadmeSum {", "public class Sum {");
        assertEquals(program, body);
    }
}
