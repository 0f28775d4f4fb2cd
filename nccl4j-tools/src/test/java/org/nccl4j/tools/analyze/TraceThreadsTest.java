package org.nccl4j.tools.analyze;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.trace.TraceDump.ThreadStack;

/**
 * {@link TraceThreads}: frames as {@link StackTraceElement#toString()} writes them (class loader and module first or
 * not, hidden classes), where a thread is (NCCL, CUDA, native, nccl4j, the JDK, its own code) and its top user frame,
 * and the lines the report prints.
 */
class TraceThreadsTest {
    private static ThreadStack stack(String state, String... frames) {
        return new ThreadStack("main", 1, state, List.of(frames));
    }

    @Test
    void framesLoseTheirLoaderAndModuleButHiddenClassesKeepTheirSlash() {
        assertEquals("com.example.Train.step(Train.java:42)", TraceThreads.display("app//com.example.Train.step"
                + "(Train.java:42)"));
        assertEquals("java.lang.Thread.sleep(Native Method)", TraceThreads.display("java.base@17.0.15/java.lang.Thread"
                + ".sleep(Native Method)"));
        assertEquals("java.lang.Thread.run(Thread.java:840)", TraceThreads.display("java.base/java.lang.Thread.run"
                + "(Thread.java:840)"));
        assertEquals("com.x.Y.z(Y.java:1)", TraceThreads.display("loader/mod@1.0/com.x.Y.z(Y.java:1)"));
        assertEquals("com.x.Y$$Lambda$14/0x0000000800c03000.run(Unknown Source)", TraceThreads.display("app//com.x"
                + ".Y$$Lambda$14/0x0000000800c03000.run(Unknown Source)"));
        assertEquals("com.x.Y.z(a/b.java:1)", TraceThreads.display("com.x.Y.z(a/b.java:1)"));
        assertTrue(TraceThreads.jdk("java.base/jdk.internal.misc.Unsafe.park(Native Method)"));
        assertTrue(TraceThreads.jdk("sun.nio.ch.Net.poll(Native Method)"));
        assertTrue(TraceThreads.library("app//org.bytedeco.cuda.global.cudart.cudaStreamSynchronize(Native Method)"));
        assertTrue(TraceThreads.user("app//org.nccl4jx.Foo.bar(Foo.java:1)"));
        assertFalse(TraceThreads.user("app//org.nccl4j.Communicator.allReduce(Communicator.java:1)"));
    }

    @Test
    void aThreadInNcclIsInNcclCalledFromTheProgram() {
        ThreadStack t = stack("RUNNABLE", "app//org.nccl4j.jni.NcclNative.ncclCommDestroy(Native Method)",
                "app//org.nccl4j.Communicator.close(Communicator.java:500)", "app//com.example.Train.main(Train.java:9)");
        assertEquals(TraceThreads.Where.NCCL, TraceThreads.where(t));
        assertEquals("com.example.Train.main(Train.java:9)", TraceThreads.userFrame(t));
        assertEquals("thread \"main\" RUNNABLE in NCCL (native code) at org.nccl4j.jni.NcclNative.ncclCommDestroy(Native"
                + " Method), called from com.example.Train.main(Train.java:9)", TraceThreads.describe(t));
    }

    @Test
    void aThreadInCudaIsInCuda() {
        ThreadStack t = stack("RUNNABLE", "org.bytedeco.cuda.global.cudart.cudaStreamSynchronize(Native Method)",
                "org.nccl4j.PresetsCudaBackend.streamSynchronize(PresetsCudaBackend.java:89)",
                "org.nccl4j.Stream.synchronize(Stream.java:120)", "com.example.Train.step(Train.java:70)");
        assertEquals(TraceThreads.Where.CUDA, TraceThreads.where(t));
        assertEquals("com.example.Train.step(Train.java:70)", TraceThreads.userFrame(t));
    }

    @Test
    void aWaitInTheJdkCountsForTheCodeThatCalledIt() {
        ThreadStack inNccl4j = stack("TIMED_WAITING", "java.base/java.lang.Thread.sleep(Native Method)",
                "org.nccl4j.Event.synchronize(Event.java:80)", "com.example.Train.step(Train.java:71)");
        assertEquals(TraceThreads.Where.NCCL4J, TraceThreads.where(inNccl4j));
        assertEquals("thread \"main\" TIMED_WAITING in nccl4j at org.nccl4j.Event.synchronize(Event.java:80), called"
                + " from com.example.Train.step(Train.java:71)", TraceThreads.describe(inNccl4j));
        ThreadStack inOwn = stack("WAITING", "java.base/jdk.internal.misc.Unsafe.park(Native Method)",
                "java.base/java.util.concurrent.locks.LockSupport.park(LockSupport.java:211)",
                "com.example.Barrier.await(Barrier.java:30)", "com.example.Train.step(Train.java:75)");
        assertEquals(TraceThreads.Where.USER, TraceThreads.where(inOwn));
        assertEquals("thread \"main\" WAITING in its own code at com.example.Barrier.await(Barrier.java:30)",
                TraceThreads.describe(inOwn));
        ThreadStack jdkOnly = stack("WAITING", "java.base/jdk.internal.misc.Unsafe.park(Native Method)",
                "java.base/java.lang.Thread.run(Thread.java:840)");
        assertEquals(TraceThreads.Where.JDK, TraceThreads.where(jdkOnly));
        assertNull(TraceThreads.userFrame(jdkOnly));
        assertEquals("thread \"main\" WAITING in the JDK at jdk.internal.misc.Unsafe.park(Native Method)",
                TraceThreads.describe(jdkOnly));
    }

    @Test
    void aProgramsOwnNativeMethodIsNativeCode() {
        ThreadStack t = stack("RUNNABLE", "com.example.Kernels.launch(Native Method)",
                "com.example.Train.step(Train.java:50)");
        assertEquals(TraceThreads.Where.NATIVE, TraceThreads.where(t));
        assertEquals("thread \"main\" RUNNABLE in native code at com.example.Kernels.launch(Native Method)",
                TraceThreads.describe(t));
    }

    @Test
    void aThreadWithoutFramesSaysSo() {
        ThreadStack t = new ThreadStack("done", 9, "TERMINATED", List.of());
        assertNull(TraceThreads.where(t));
        assertEquals("thread \"done\" TERMINATED (no frames)", TraceThreads.describe(t));
        assertEquals(List.of("rank 2: thread \"done\" (id 9) TERMINATED (no frames)"), TraceThreads.lines(2, t));
    }

    @Test
    void theReportShowsTheFirstEightFramesAndHowManyMore() {
        List<String> frames = new ArrayList<>();
        for (int i = 0; i < 11; i++) {
            frames.add("app//com.example.Deep.f" + i + "(Deep.java:" + i + ")");
        }
        List<String> lines = TraceThreads.lines(0, new ThreadStack("main", 1, "RUNNABLE", frames));
        assertEquals(1 + TraceThreads.SHOWN_FRAMES + 1, lines.size(), lines.toString());
        assertEquals("rank 0: thread \"main\" (id 1) RUNNABLE in its own code at com.example.Deep.f0(Deep.java:0)",
                lines.get(0));
        assertEquals("    at com.example.Deep.f7(Deep.java:7)", lines.get(8));
        assertEquals("    ... 3 more", lines.get(9));
    }

    @Test
    void theThreadAFindingNamesIsTheOneInItsOwnCode() {
        ThreadStack watchdog = new ThreadStack("watchdog", 2, "TIMED_WAITING", List.of("java.base/java.lang.Thread"
                + ".sleep(Native Method)", "org.nccl4j.Watchdog.run(Watchdog.java:300)"));
        ThreadStack nccl = new ThreadStack("issuer", 3, "RUNNABLE", List.of("org.nccl4j.jni.NcclNative.ncclGroupEnd"
                + "(Native Method)", "com.example.Train.step(Train.java:60)"));
        ThreadStack own = stack("RUNNABLE", "com.example.Loader.next(Loader.java:42)");
        assertEquals(own, TraceThreads.pick(List.of(watchdog, nccl, own)));
        assertEquals(nccl, TraceThreads.pick(List.of(watchdog, nccl)));
        assertEquals(watchdog, TraceThreads.pick(List.of(watchdog)));
        assertNull(TraceThreads.pick(List.of()));
    }
}
