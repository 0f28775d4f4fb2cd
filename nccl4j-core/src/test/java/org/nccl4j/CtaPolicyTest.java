package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.StubNccl;

/**
 * {@link CtaPolicy} and {@link CommConfig.Builder#ctaPolicy(CtaPolicy)} against the stub NCCL 2.28.3: nccl.h's
 * values reach ncclConfig_t.CTAPolicy; EFFICIENCY | ZERO (3), which NCCL reads as bits only from 2.29.2, is refused
 * on 2.28.3 naming that release and passes on 2.30.7. (ZERO on 2.27: WindowTest; the field on 2.19: OldNcclFallbackTest.)
 */
class CtaPolicyTest extends StubFixture {

    @Test
    void theValuesAreNcclHs() {
        assertEquals(0, CtaPolicy.DEFAULT.value());
        assertEquals(1, CtaPolicy.EFFICIENCY.value());
        assertEquals(2, CtaPolicy.ZERO.value());
        assertEquals("2.27.3", CtaPolicy.DEFAULT.since());
        assertEquals("2.27.3", CtaPolicy.EFFICIENCY.since());
        assertEquals("2.28.3", CtaPolicy.ZERO.since());
    }

    @Test
    void eachPolicyReachesTheConfig() {
        for (CtaPolicy p : CtaPolicy.values()) {
            CommConfig cfg = CommConfig.builder().ctaPolicy(p).build();
            assertEquals("CommConfig[CTAPolicy=" + p.value() + "]", cfg.toString());
            mark();
            later(Communicator.create(0, 2, testId(), 0, cfg));
            assertEquals(Integer.toString(p.value()), only("ncclCommInitRankConfig").get("CTAPolicy"), p.name());
        }
        NullPointerException e = assertThrows(NullPointerException.class, () -> CommConfig.builder().ctaPolicy(null));
        assertEquals("policy must not be null", e.getMessage());
    }

    @Test
    void bothBitsAreRefusedBeforeNccl229() {
        CommConfig both = CommConfig.builder().ctaPolicy(3).build();
        mark();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> later(Communicator.create(0, 2, testId(), 0, both)));
        assertEquals("CommConfig CTAPolicy 3 (EFFICIENCY | ZERO) needs NCCL 2.29.2 or newer, but the loaded NCCL is "
                + "2.28.3 (" + Nccl.library().path() + "), which refuses it as invalid. Choose another CTA policy, or "
                + "load a newer NCCL.", e.getMessage());
        Communicator parent = comm(0, 1);
        mark();
        assertThrows(IllegalArgumentException.class, () -> later(parent.split(0, 0, both)));
        assertEquals(List.of(), newCalls(), "nothing reached NCCL");
    }

    @Test
    void bothBitsPassOnNccl2307() {
        stub = StubNccl.use(StubNccl.latest());
        try (Communicator c = Communicator.create(0, 2, testId(), 0, CommConfig.builder().ctaPolicy(3).build())) {
            assertEquals("3", stub.last("ncclCommInitRankConfig").get("CTAPolicy"));
            assertTrue(c.rank() == 0);
        } finally {
            stub = StubNccl.useFull();
        }
    }
}
