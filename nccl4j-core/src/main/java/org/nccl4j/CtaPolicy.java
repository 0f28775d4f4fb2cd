package org.nccl4j;

import org.nccl4j.jni.NcclLibrary;

/**
 * How many CTAs (thread blocks, and so SMs) a communicator's collectives may take: {@code ncclConfig_t.CTAPolicy},
 * set with {@link CommConfig.Builder#ctaPolicy(CtaPolicy)}. The values are nccl.h's {@code NCCL_CTA_POLICY_*}
 * macros. A communicator is not made with a policy newer than the loaded NCCL: {@link Communicator#create} and
 * {@link Communicator#split} throw {@link IllegalArgumentException} naming the release that adds it.
 */
public enum CtaPolicy {
    /**
     * {@code NCCL_CTA_POLICY_DEFAULT} (0, NCCL 2.27.3+): NCCL adjusts its resource use for the best performance of
     * the collective; suits most programs.
     */
    DEFAULT(0x00, 22703),
    /**
     * {@code NCCL_CTA_POLICY_EFFICIENCY} (1, NCCL 2.27.3+): NCCL uses as few CTAs as give decent performance, for
     * programs that overlap communication with computation. NCCL 2.27 and 2.28 act on it for all-gather and
     * reduce-scatter on buffers registered with {@code ncclCommRegister} ({@link Communicator#register}), unless
     * {@code NCCL_ALGO} or {@code NCCL_PROTO} is set or the communicator spans a multi-node NVLink domain.
     */
    EFFICIENCY(0x01, 22703),
    /**
     * {@code NCCL_CTA_POLICY_ZERO} (2, NCCL 2.28.3+): NCCL uses no CTA wherever it can, even at some cost in
     * performance. In 2.28 that means the copy-engine collectives: all-gather, all-to-all, gather and scatter whose
     * send and receive buffers both lie in symmetric windows ({@link Window}), within one NVLink domain, with a CUDA
     * driver of 12.5 or newer; other collectives run as under {@link #DEFAULT}. NCCL 2.30.7 adds all-gather and
     * all-to-all across nodes (the network through the CPU proxy, copy engines within the node). Copy engines give
     * higher bandwidth for large messages and higher latency for small ones. NCCL 2.27 refuses the value.
     */
    ZERO(0x02, 22803);

    private final int value;
    private final int since;

    CtaPolicy(int value, int since) {
        this.value = value;
        this.since = since;
    }

    /** @return the {@code NCCL_CTA_POLICY_*} value, as {@code ncclConfig_t.CTAPolicy} takes it */
    public int value() {
        return value;
    }

    /** @return the first NCCL release that accepts it, as "major.minor.patch" */
    public String since() {
        return NcclLibrary.versionString(since);
    }

    int sinceCode() {
        return since;
    }
}
