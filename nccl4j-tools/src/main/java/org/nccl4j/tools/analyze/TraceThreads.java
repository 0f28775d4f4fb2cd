package org.nccl4j.tools.analyze;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.nccl4j.trace.TraceDump.ThreadStack;

/**
 * How the analyzer reads the thread stacks of a dump ({@link ThreadStack}): where a thread is (in NCCL or CUDA, in
 * nccl4j, in the JDK, or in the program's own code) and its top user frame, the first frame outside the JDK
 * ({@code java.*}, {@code javax.*}, {@code jdk.*}, {@code sun.*}, {@code com.sun.*}) and the libraries under the
 * program ({@code org.nccl4j.*}, and {@code org.bytedeco.*}, the JavaCPP bindings nccl4j reaches CUDA through).
 * That frame is the program's line that the thread is in, or that called into the library it waits in.
 */
final class TraceThreads {
    /** The frames the text report shows of each thread. */
    static final int SHOWN_FRAMES = 8;

    private static final List<String> JDK = List.of("java.", "javax.", "jdk.", "sun.", "com.sun.");
    private static final List<String> LIBRARIES = List.of("org.nccl4j.", "org.bytedeco.");
    private static final String NATIVE = "(Native Method)";

    /** Where a thread is: the code its innermost frames belong to. */
    enum Where {
        /** In a native method of nccl4j's NCCL binding (org.nccl4j.jni): inside NCCL. */
        NCCL("nccl", "in NCCL (native code)"),
        /** In a native method of the CUDA binding (org.bytedeco.cuda): inside the CUDA runtime or driver. */
        CUDA("cuda", "in CUDA (native code)"),
        /** In another native method outside the JDK (JavaCPP's, or the program's own JNI). */
        NATIVE("native", "in native code"),
        /** In nccl4j's Java code (or JavaCPP's), including a wait in the JDK that nccl4j called. */
        NCCL4J("nccl4j", "in nccl4j"),
        /** In the JDK only: no frame of the program or nccl4j on the stack. */
        JDK("jdk", "in the JDK"),
        /** In the program's own code, including a wait in the JDK that the program called. */
        USER("user", "in its own code");

        private final String label;
        private final String text;

        Where(String label, String text) {
            this.label = label;
            this.text = text;
        }

        /** The name {@code --json} gives it: {@code "nccl"}, {@code "user"}, ... */
        String label() {
            return label;
        }

        /** How the text report says it: {@code "in NCCL (native code)"}, ... */
        String text() {
            return text;
        }
    }

    private TraceThreads() {
    }

    /**
     * A frame without the class loader and module that {@link StackTraceElement#toString()} may put first:
     * {@code app//com.example.Train.step(Train.java:42)} and {@code java.base@17.0.15/java.lang.Thread.sleep(Native
     * Method)} give {@code com.example.Train.step(Train.java:42)} and {@code java.lang.Thread.sleep(Native Method)}.
     * The '/' in a hidden class's name ({@code Foo$$Lambda$14/0x0000000800c03000}) stays.
     */
    static String display(String frame) {
        int paren = frame.indexOf('(');
        int end = paren < 0 ? frame.length() : paren;
        int start = 0;
        for (int slash = frame.indexOf('/'); slash >= 0 && slash < end; slash = frame.indexOf('/', start)) {
            if (frame.startsWith("0x", slash + 1)) {
                break;
            }
            start = slash + 1;
        }
        return frame.substring(start);
    }

    private static boolean startsWithAny(String s, List<String> prefixes) {
        for (String p : prefixes) {
            if (s.startsWith(p)) {
                return true;
            }
        }
        return false;
    }

    /** Whether a frame is the JDK's. */
    static boolean jdk(String frame) {
        return startsWithAny(display(frame), JDK);
    }

    /** Whether a frame is nccl4j's or JavaCPP's. */
    static boolean library(String frame) {
        return startsWithAny(display(frame), LIBRARIES);
    }

    /** Whether a frame is the program's own: neither the JDK's nor a library's. */
    static boolean user(String frame) {
        return !jdk(frame) && !library(frame);
    }

    /**
     * The thread's top user frame.
     *
     * @return the first frame of the program's own code, without loader and module ({@link #display}), or null
     *         when the stack has none
     */
    static String userFrame(ThreadStack t) {
        for (String f : t.frames()) {
            if (user(f)) {
                return display(f);
            }
        }
        return null;
    }

    /**
     * Where the thread is: in NCCL or CUDA when its innermost frame is a native method of their bindings, else by
     * the innermost frame outside the JDK (so that a wait in the JDK counts for the code that called it).
     *
     * @return where, or null for a thread without frames (not started, or ended)
     */
    static Where where(ThreadStack t) {
        if (t.frames().isEmpty()) {
            return null;
        }
        String top = t.frames().get(0);
        String m = display(top);
        if (top.endsWith(NATIVE)) {
            if (m.startsWith("org.nccl4j.")) {
                return Where.NCCL;
            }
            if (m.startsWith("org.bytedeco.cuda.")) {
                return Where.CUDA;
            }
            if (!jdk(top)) {
                return Where.NATIVE;
            }
        }
        String owner = owner(t);
        if (owner == null) {
            return Where.JDK;
        }
        return library(owner) ? Where.NCCL4J : Where.USER;
    }

    /** The innermost frame outside the JDK, or null. */
    private static String owner(ThreadStack t) {
        for (String f : t.frames()) {
            if (!jdk(f)) {
                return f;
            }
        }
        return null;
    }

    /** The frame {@link #where} is about: the innermost for native code and the JDK, else the owner. */
    private static String at(ThreadStack t, Where w) {
        return display(switch (w) {
            case NCCL, CUDA, NATIVE, JDK -> t.frames().get(0);
            default -> owner(t);
        });
    }

    /**
     * One thread in one line: {@code thread "main" RUNNABLE in its own code at
     * com.example.Loader.next(Loader.java:42)}, {@code thread "main" RUNNABLE in NCCL (native code) at
     * org.nccl4j.jni.NcclNative.ncclGroupEnd(Native Method), called from com.example.Train.step(Train.java:60)}.
     */
    static String describe(ThreadStack t) {
        return describe(t, false);
    }

    private static String describe(ThreadStack t, boolean withId) {
        String head = "thread \"" + t.name() + "\" " + (withId ? "(id " + t.id() + ") " : "") + t.state();
        Where w = where(t);
        if (w == null) {
            return head + " (no frames)";
        }
        String at = at(t, w);
        String user = userFrame(t);
        return head + " " + w.text() + " at " + at + (user == null || user.equals(at) ? "" : ", called from " + user);
    }

    /**
     * Writes one thread as the {@code --json} report gives it: {@code name}, {@code id}, {@code state},
     * {@code location} ({@link Where#label()}, null for a thread without frames), {@code at} (the frame the location
     * is about), {@code userFrame} (null when none) and {@code frames} (all the dump holds, as it holds them).
     */
    static void writeJson(ThreadStack t, JsonGenerator g) throws IOException {
        Where w = where(t);
        g.writeStartObject();
        g.writeStringField("name", t.name());
        g.writeNumberField("id", t.id());
        g.writeStringField("state", t.state());
        g.writeStringField("location", w == null ? null : w.label());
        g.writeStringField("at", w == null ? null : at(t, w));
        g.writeStringField("userFrame", userFrame(t));
        g.writeArrayFieldStart("frames");
        for (String f : t.frames()) {
            g.writeString(f);
        }
        g.writeEndArray();
        g.writeEndObject();
    }

    /**
     * The thread that a finding names: the first that is in the program's own code, else the first with a user
     * frame, else the first.
     *
     * @return the thread, or null when there are none
     */
    static ThreadStack pick(List<ThreadStack> threads) {
        for (ThreadStack t : threads) {
            if (where(t) == Where.USER) {
                return t;
            }
        }
        for (ThreadStack t : threads) {
            if (userFrame(t) != null) {
                return t;
            }
        }
        return threads.isEmpty() ? null : threads.get(0);
    }

    /**
     * The report's lines of one rank's thread: {@code rank 1: thread "main" (id 1) ...}, then its first
     * {@value #SHOWN_FRAMES} frames, then how many more.
     */
    static List<String> lines(int rank, ThreadStack t) {
        List<String> out = new ArrayList<>();
        out.add("rank " + rank + ": " + describe(t, true));
        List<String> frames = t.frames();
        for (int i = 0; i < frames.size() && i < SHOWN_FRAMES; i++) {
            out.add("    at " + display(frames.get(i)));
        }
        if (frames.size() > SHOWN_FRAMES) {
            out.add("    ... " + (frames.size() - SHOWN_FRAMES) + " more");
        }
        return out;
    }
}
