package org.nccl4j.jni;

/**
 * Run in a fresh JVM by {@link LibraryChoiceTest}: calls {@link NcclLibrary#load()} with whatever system
 * properties and environment the JVM was started with, and prints the outcome as {@code key=value} lines.
 */
public final class LoadProbe {
    private LoadProbe() {
    }

    public static void main(String[] args) {
        try {
            NcclLibrary lib = NcclLibrary.load();
            System.out.println("outcome=loaded");
            System.out.println("path=" + lib.path());
            System.out.println("source=" + lib.source());
            System.out.println("requested=" + lib.requestedName());
            System.out.println("version=" + lib.version());
        } catch (NcclUnavailableException e) {
            System.out.println("outcome=unavailable");
            System.out.println("message=" + e.getMessage().replace('\n', ' '));
        }
    }
}
