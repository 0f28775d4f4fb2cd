/**
 * nccl4j-run, the local launcher: {@link org.nccl4j.tools.run.Launcher} (the main: starts the ranks, prefixes their
 * lines, stops them all when one fails), {@code LaunchOptions} (the command line; an example's simple name is looked
 * up at run time in {@code org.nccl4j.examples}, then in {@code org.nccl4j.tools.harness}), {@code Nodes} (several
 * nodes, and the rehearsal of several hosts on one), {@code GpuSharing} (more ranks than GPUs),
 * {@code LinePrefixer}.
 */
package org.nccl4j.tools.run;
