package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** {@link Stream} and {@link Event} over {@link FakeCuda}: what reaches CUDA, ownership, closed objects, failures. */
class StreamEventTest extends StubFixture {

    @Test
    void createdStreamIsNonBlockingOnItsDeviceAndDestroyedOnce() {
        cuda.clearCalls();
        Stream s = Stream.create(2);
        assertEquals(List.of("getDevice", "setDevice device=2", "streamCreate device=2 flags=1", "setDevice device=0"),
                cuda.calls());
        assertEquals(FakeCuda.STREAM_BASE + 0x10, s.handle());
        assertEquals(2, s.device());
        assertEquals("Stream[" + hex(s.handle()) + ", device 2]", s.toString());
        assertFalse(s.isClosed());
        assertEquals(1, cuda.liveStreams());
        s.close();
        s.close();
        assertTrue(s.isClosed());
        assertEquals(List.of("streamDestroy stream=" + hex(s.handle())), cuda.calls("streamDestroy"));
        assertEquals(0, cuda.liveStreams());
    }

    @Test
    void wrappedAndDefaultStreamsAreNeverDestroyed() {
        Stream w = Stream.wrap(0x7f00_0000_1230L, 1);
        assertEquals(0x7f00_0000_1230L, w.handle());
        assertEquals(1, w.device());
        assertEquals("Stream[0x7f0000001230, device 1, wrapped]", w.toString());
        Stream d = Stream.defaultStream(3);
        assertEquals(0, d.handle());
        assertEquals(3, d.device());
        w.close();
        d.close();
        assertTrue(w.isClosed());
        assertEquals(List.of(), cuda.calls("streamDestroy"));
        assertThrows(IllegalStateException.class, w::synchronize, "closed all the same");
    }

    @Test
    void streamOperationsReachCuda() {
        Stream s = stream(1);
        Event e = later(Event.create(1));
        s.synchronize();
        assertEquals(List.of("streamSynchronize stream=" + hex(s.handle())), cuda.calls("streamSynchronize"));
        assertFalse(s.isCapturing());
        cuda.capturing(s.handle(), 1);
        assertTrue(s.isCapturing());
        cuda.capturing(s.handle(), 2);
        assertTrue(s.isCapturing(), "an invalidated capture is still a capture");
        cuda.capturing(s.handle(), 0);
        assertFalse(s.isCapturing());
        s.waitFor(e);
        assertEquals(List.of("streamWaitEvent stream=" + hex(s.handle()) + " event=" + hex(e.handle())),
                cuda.calls("streamWaitEvent"));
    }

    @Test
    void aClosedStreamRefusesEverything() {
        Stream s = Stream.create(2);
        Event e = later(Event.create(2));
        s.close();
        cuda.clearCalls();
        for (Executable op : List.<Executable>of(s::synchronize, s::isCapturing, () -> s.waitFor(e), () -> e.record(s))) {
            IllegalStateException x = assertThrows(IllegalStateException.class, op);
            assertEquals("this Stream (device 2) is closed", x.getMessage());
        }
        assertEquals(List.of(), cuda.calls());
    }

    @Test
    void eventsRecordSynchronizeTimeAndCloseOnce() {
        Stream s = stream(1);
        cuda.clearCalls();
        Event start = Event.create(1);
        Event end = Event.create(1);
        assertEquals("eventCreate device=1 flags=0", cuda.calls("eventCreate").get(0), "timing enabled, on device 1");
        assertEquals(1, start.device());
        assertSame(start, start.record(s));
        end.record(s);
        assertEquals("eventRecord event=" + hex(start.handle()) + " stream=" + hex(s.handle()),
                cuda.calls("eventRecord").get(0));
        end.synchronize();
        assertEquals(List.of("eventSynchronize event=" + hex(end.handle())), cuda.calls("eventSynchronize"));
        cuda.elapsedMs(3.5f);
        assertEquals(3.5f, end.elapsedSince(start));
        assertEquals(List.of("eventElapsedTime start=" + hex(start.handle()) + " end=" + hex(end.handle())),
                cuda.calls("eventElapsedTime"));
        start.close();
        start.close();
        end.close();
        assertEquals(2, cuda.calls("eventDestroy").size());
        assertEquals(0, cuda.liveEvents());
        for (Executable op : List.<Executable>of(() -> start.record(s), start::synchronize,
                () -> start.elapsedSince(end))) {
            IllegalStateException x = assertThrows(IllegalStateException.class, op);
            assertEquals("this Event (device 1) is closed", x.getMessage());
        }
    }

    @Test
    void cudaFailuresOfStreamsAndEvents() {
        Stream s = stream(2);
        Event e = later(Event.create(2));
        cuda.fail("streamSynchronize", FakeCuda.INVALID_HANDLE);
        CudaException x = assertThrows(CudaException.class, s::synchronize);
        assertEquals("cudaStreamSynchronize failed on device 2: cudaErrorInvalidResourceHandle (400): invalid "
                + "resource handle", x.getMessage());
        cuda.fail("streamIsCapturing", 1);
        assertEquals("cudaStreamIsCapturing", assertThrows(CudaException.class, s::isCapturing).operation());
        cuda.fail("eventRecord", 1);
        assertEquals("cudaEventRecord", assertThrows(CudaException.class, () -> e.record(s)).operation());
        cuda.fail("eventCreate", 2);
        x = assertThrows(CudaException.class, () -> Event.create(3));
        assertEquals("cudaEventCreateWithFlags", x.operation());
        assertEquals(3, x.device());
        assertEquals(0, cuda.current());
    }

    @Test
    void closedOrNullEventsNeverReachCuda() {
        Stream s = stream(1);
        Event e = Event.create(1);
        Event other = later(Event.create(1));
        e.close();
        cuda.clearCalls();
        IllegalStateException x = assertThrows(IllegalStateException.class, () -> s.waitFor(e));
        assertEquals("this Event (device 1) is closed", x.getMessage());
        x = assertThrows(IllegalStateException.class, () -> other.elapsedSince(e));
        assertEquals("this Event (device 1) is closed", x.getMessage());
        NullPointerException n = assertThrows(NullPointerException.class, () -> s.waitFor(null));
        assertEquals("event must not be null", n.getMessage());
        n = assertThrows(NullPointerException.class, () -> other.elapsedSince(null));
        assertEquals("start must not be null", n.getMessage());
        n = assertThrows(NullPointerException.class, () -> other.record(null));
        assertEquals("stream must not be null", n.getMessage());
        assertEquals(List.of(), cuda.calls(), "nothing reached CUDA");
    }

    @Test
    void anEventIsRecordedOnlyOnAStreamOfItsDevice() {
        Stream s = stream(2);
        Event e = later(Event.create(1));
        cuda.clearCalls();
        IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> e.record(s));
        assertEquals("stream is on device 2 but this event is on device 1: record an event on a stream of its own "
                + "device (Event.create(2))", x.getMessage());
        assertEquals(List.of(), cuda.calls());
        Event onTwo = later(Event.create(2));
        s.waitFor(e); // waiting across devices is allowed
        assertSame(onTwo, onTwo.record(s));
        assertEquals(1, cuda.calls("streamWaitEvent").size());
    }
}
