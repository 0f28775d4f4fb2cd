/**
 * What nccl4j's command-line tools share: {@link org.nccl4j.tools.cli.Tools} (the {@code --version} text, the
 * exit statuses, the one-line usage errors).
 */
package org.nccl4j.tools.cli;
