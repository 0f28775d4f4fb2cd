package org.nccl4j.control;

/**
 * A rank's process as the liveness channel knows it: the rank, its host and process id (the host null and the pid -1
 * when the channel never heard them). The channel's roster holds one for each rank that joined, and its losses one for
 * each rank lost.
 *
 * @param rank the rank (the launch's, or the communicator's where a caller renumbered it)
 * @param host the host it runs on, or null
 * @param pid its process id, or -1
 */
public record RankProcess(int rank, String host, long pid) {
    @Override
    public String toString() {
        return "rank " + rank + (host == null ? "" : " (" + host + ", pid " + pid + ")");
    }
}
