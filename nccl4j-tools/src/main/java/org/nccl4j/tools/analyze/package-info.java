/**
 * nccl4j-trace, the analyzer of the flight recorder's dumps (nccl4j-core's {@code org.nccl4j.trace} writes them):
 * {@link org.nccl4j.tools.analyze.TraceAnalyzer} (the main), {@code TraceInput} (reading the dumps),
 * {@code TraceComparer} (the ranks side by side), {@code TraceVerdict} and {@code TraceFinding} (the verdict line and
 * what it rests on), {@code TraceThreads} (the threads' stacks), {@code TraceText} (the text report).
 */
package org.nccl4j.tools.analyze;
