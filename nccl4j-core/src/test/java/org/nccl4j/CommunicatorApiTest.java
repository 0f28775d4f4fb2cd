package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Member;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Communicator's public and protected API, and its nested Registration's, is the one written down in
 * {@code communicator-api.txt}: moving its logic into the package-private classes beside it (issue 30) changes no
 * signature. A change that is meant changes the file too (the failure prints the list as it is now).
 */
class CommunicatorApiTest {
    @Test
    void theApiIsTheOneWrittenDown() throws IOException {
        List<String> now = new ArrayList<>();
        for (Class<?> c : List.of(Communicator.class, Communicator.Registration.class)) {
            now.add(Modifier.toString(c.getModifiers()) + " " + c.getName());
            Stream.of(c.getDeclaredFields(), c.getDeclaredConstructors(), c.getDeclaredMethods())
                    .flatMap(Stream::of)
                    .map(m -> (Member) m)
                    .filter(m -> !m.isSynthetic() && (m.getModifiers() & (Modifier.PUBLIC | Modifier.PROTECTED)) != 0)
                    .map(CommunicatorApiTest::signature)
                    .sorted()
                    .forEach(s -> now.add("  " + s));
        }
        String expected;
        try (InputStream in = CommunicatorApiTest.class.getResourceAsStream("communicator-api.txt")) {
            expected = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertEquals(expected.strip(), String.join("\n", now), "Communicator's public API changed");
    }

    private static String signature(Member m) {
        if (m instanceof java.lang.reflect.Method x) {
            return x.toGenericString();
        }
        if (m instanceof java.lang.reflect.Constructor<?> x) {
            return x.toGenericString();
        }
        return ((java.lang.reflect.Field) m).toGenericString();
    }
}
