/**
 * nccl4j's checked API over NVIDIA NCCL (placeholder, rewritten below).
 */
package org.nccl4j;
