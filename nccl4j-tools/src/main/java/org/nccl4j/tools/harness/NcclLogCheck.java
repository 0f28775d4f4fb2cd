package org.nccl4j.tools.harness;

import org.nccl4j.diagnostics.ExitStatus;
import org.nccl4j.tools.cli.Programs;
import picocli.CommandLine.Command;
import org.nccl4j.tools.cli.Tools;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.Map;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.NcclLog;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
import org.slf4j.LoggerFactory;

/**
 * Checks that NCCL's own log arrives through SLF4J: run per rank with {@code NCCL_DEBUG=INFO} (and no
 * {@code NCCL_DEBUG_FILE}), e.g. {@code NCCL_DEBUG=INFO scripts/nccl4j-run --share-gpu -np 3 NcclLogCheck}. It
 * listens on the logger {@value NcclLog#LOGGER} with a Logback appender, makes a communicator, runs an all-reduce,
 * closes it, and checks what arrived: NCCL's lines, at INFO, with this process's rank in the MDC ({@code nccl.rank})
 * on every line that names its communicator. Prints one verdict line per rank and exits 0 when it held, 1 when not.
 */
public final class NcclLogCheck {
    private NcclLogCheck() {
    }

    /**
     * Runs the check.
     *
     * @param args none
     */
    public static void main(String[] args) {
        Tools.parseOrExit(new Options(), args);   // --help, --version; no other option
        System.exit(ExitStatus.of("NcclLogCheck", NcclLogCheck::run));
    }

    static int run() {
        ch.qos.logback.classic.Logger nccl = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(NcclLog.LOGGER);
        ListAppender<ILoggingEvent> seen = new ListAppender<>();
        seen.start();
        nccl.addAppender(seen);
        int rank;
        try (Communicator comm = Communicator.fromEnvironment();
             Stream stream = Stream.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), 1024, DataType.FLOAT32)) {
            rank = comm.rank();
            comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);
            stream.synchronize();
        }
        try {
            Thread.sleep(200);   // the reader's next look (every 20 ms)
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<ILoggingEvent> events = List.copyOf(seen.list);
        long info = events.stream().filter(e -> e.getLevel() == ch.qos.logback.classic.Level.INFO).count();
        long named = 0;
        long wrong = 0;
        for (ILoggingEvent e : events) {
            Map<String, String> mdc = e.getMDCPropertyMap();
            if (mdc.containsKey("nccl.size")) {   // a line that names this process's communicator
                named++;
                if (!Integer.toString(rank).equals(mdc.get("nccl.rank"))) {
                    wrong++;
                }
            }
        }
        boolean ok = NcclLog.capturing() && info > 0 && named > 0 && wrong == 0;
        String first = events.stream().filter(e -> e.getMDCPropertyMap().containsKey("nccl.size")).findFirst()
                .map(e -> e.getFormattedMessage() + " " + e.getMDCPropertyMap()).orElse("none");
        System.out.println("rank " + rank + ": " + (ok ? "PASSED" : "FAILED") + ": " + events.size()
                + " NCCL lines through SLF4J (" + info + " at INFO), " + named + " naming this rank's communicator, "
                + wrong + " with another rank in the MDC; capturing " + NcclLog.capturing() + "; e.g. " + first);
        return ok ? 0 : 1;
    }

    /** The command line: no option but {@code --help} and {@code --version}. */
    @Command(name = "NcclLogCheck", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            description = "Checks that NCCL's own log arrives through SLF4J with the rank in the MDC (run with"
                    + " NCCL_DEBUG=INFO).")
    static final class Options {
    }
}
