/**
 * What nccl4j's command-line tools share: {@link org.nccl4j.tools.cli.Tools} (the {@code --version} text, the
 * exit statuses, the one-line usage errors), {@link org.nccl4j.tools.cli.JsonDocs} (the tools' JSON, read and
 * written with Jackson) and {@link org.nccl4j.tools.cli.Programs} (what a tool or harness that runs as a rank needs
 * beyond the examples' {@code Examples}, whose exit status without NCCL or a GPU, launch test and counts it uses: a
 * median, a rank that stops).
 */
package org.nccl4j.tools.cli;
