package org.nccl4j.tools.run;

import org.nccl4j.examples.Examples;
import org.nccl4j.launch.LaunchInfo;

/**
 * A rank for LauncherTest: prints what {@link LaunchInfo#detect()} (the detection of
 * {@code Communicator.fromEnvironment()}) makes of the environment nccl4j-run gave it, one line.
 */
public final class LaunchProbe {
    private LaunchProbe() {
    }

    /**
     * Prints the launch as seen by this rank, and its arguments.
     *
     * @param args echoed
     */
    public static void main(String[] args) {
        LaunchInfo l = LaunchInfo.detect();
        System.out.println("rank " + l.rank() + " of " + l.worldSize() + ", local " + l.localRank().orElse(-1) + " of "
                + l.localWorldSize().orElse(-1) + ", device " + l.device() + ", master " + l.masterAddr().orElse("?")
                + ":" + l.masterPort().orElse(-1) + ", source " + l.source() + ", per rank "
                + Examples.launchedPerRank() + ", probe " + System.getProperty("probe") + ", args "
                + String.join(" ", args));
    }
}
