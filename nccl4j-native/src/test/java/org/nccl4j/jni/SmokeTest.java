package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class SmokeTest {
    @Test
    void allReduceReachesTheStub() {
        StubNccl stub = StubNccl.useFull();
        assertEquals(0, NcclNative.ncclAllReduce(0x1000, 0x2000, 1024, 7, 0, 0x3000, 0x4000));
        assertEquals("0x1000", stub.last("ncclAllReduce").get("sendbuff"));
        System.out.println(NcclLibrary.load().report());
    }
}
