package org.nccl4j.launch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.nccl4j.launch.ProcessEnvironment;

/** A process environment held in a map, recording every write. */
public final class MapEnvironment implements ProcessEnvironment {
    final Map<String, String> values = new HashMap<>();
    final List<String> writes = new ArrayList<>();

    public MapEnvironment with(String name, String value) {
        values.put(name, value);
        return this;
    }

    @Override
    public String get(String name) {
        return values.get(name);
    }

    @Override
    public void set(String name, String value) {
        writes.add(name + "=" + value);
        values.put(name, value);
    }
}
