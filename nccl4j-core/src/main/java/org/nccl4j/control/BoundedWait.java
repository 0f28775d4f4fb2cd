package org.nccl4j.control;

/**
 * Work that must not hold its caller for ever: run on a daemon thread of its own, waited for at most a given time
 * (a teardown that may wait for a peer, the flight records of a stuck watchdog, the aborts at exit). The caller
 * decides what a thread still alive afterwards means; being a daemon, it never keeps the JVM from ending.
 */
public final class BoundedWait {
    private BoundedWait() {
    }

    /**
     * Starts {@code work} on a daemon thread named {@code name} and waits for it at most {@code millis}.
     *
     * @param name the thread's name
     * @param millis how long to wait for it
     * @param work what it runs
     * @return the thread: alive when the work had not finished in time
     */
    public static Thread run(String name, long millis, Runnable work) {
        Thread t = new Thread(work, name);
        t.setDaemon(true);
        t.start();
        try {
            t.join(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return t;
    }
}
