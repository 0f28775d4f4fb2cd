/**
 * What nccl4j's command-line tools share: {@link org.nccl4j.tools.cli.Tools} (the {@code --version} text, the
 * exit statuses, the one-line usage errors, the options of a program that runs itself), {@link
 * org.nccl4j.tools.cli.JsonDocs} (the tools' JSON, read and written with Jackson) and {@link
 * org.nccl4j.tools.cli.Programs} (what a tool or harness that runs as a rank needs: the exit status without NCCL or a
 * GPU, grouping, counts, a rank that is killed or stops). Nothing here, nor anywhere in the tools' main sources,
 * imports nccl4j-examples: the tools run the examples by class name only.
 */
package org.nccl4j.tools.cli;
