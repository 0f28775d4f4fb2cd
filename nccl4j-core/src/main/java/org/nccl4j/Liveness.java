package org.nccl4j;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which ranks are gone: every rank keeps one TCP connection to rank 0 open for the life of its communicator, so that
 * a process that dies (its sockets closed by the kernel, whatever killed it) is known to all within milliseconds and
 * by its rank, host and pid. Rank 0 serves; when a rank's connection ends without a goodbye it tells every other
 * rank {@code LOST <rank> <host> <pid>}; when rank 0 itself goes, every rank sees its connection end.
 *
 * <p>The lines: a rank sends {@code HELLO <rank> <host> <pid>} on connecting and {@code BYE} before closing; rank 0
 * sends {@code LOST ...}, and {@code LEFT 0} when it closes on purpose. Made by
 * {@link Communicator#fromEnvironment} when the launcher set {@code MASTER_ADDR} and {@code MASTER_PORT}
 * (scripts/nccl4j-run, torchrun-style launches, plain {@code java}), on port
 * {@code MASTER_PORT + 50} ({@code NCCL4J_LIVENESS_PORT} to choose another). Not made under mpirun without those.
 */
final class Liveness implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Liveness.class);
    /** The variable that sets the port. */
    static final String PORT_VARIABLE = "NCCL4J_LIVENESS_PORT";
    /** Offset from MASTER_PORT when the variable is not set. */
    static final int PORT_OFFSET = 50;

    /** A rank that is gone. */
    record Lost(int rank, String host, long pid) {
        @Override
        public String toString() {
            return "rank " + rank + (host == null ? "" : " (" + host + ", pid " + pid + ")");
        }
    }

    private final int rank;
    private final Map<Integer, Lost> lost = new ConcurrentHashMap<>();
    private final List<Socket> peers = new CopyOnWriteArrayList<>();
    private final Map<Socket, String[]> hellos = new ConcurrentHashMap<>();
    private ServerSocket server;
    private Socket toServer;
    private volatile boolean closing;
    /** Rank 0 closed its side on purpose ({@code LEFT 0}): the end of its connection is not a loss. */
    private volatile boolean serverLeft;

    private Liveness(int rank) {
        this.rank = rank;
    }

    /** Rank 0's side: listens on {@code port}; call before the communicator is made, so that it is up for all. */
    static Liveness serve(int port) throws IOException {
        Liveness l = new Liveness(0);
        l.server = new ServerSocket();
        l.server.setReuseAddress(true);
        l.server.bind(new InetSocketAddress(port));
        Thread t = new Thread(l::accept, "nccl4j-liveness-server");
        t.setDaemon(true);
        t.start();
        return l;
    }

    /** Every rank (rank 0 too): connects to rank 0 at {@code host:port} and says hello. */
    static Liveness join(Liveness served, int rank, String host, int port) throws IOException {
        Liveness l = served != null ? served : new Liveness(rank);
        Socket s = new Socket();
        s.connect(new InetSocketAddress(host, port), 10_000);
        s.setTcpNoDelay(true);
        String hello = "HELLO " + rank + " " + org.nccl4j.trace.TraceDump.localHost().replace(' ', '_') + " "
                + ProcessHandle.current().pid() + "\n";
        s.getOutputStream().write(hello.getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().flush();
        l.toServer = s;
        Thread t = new Thread(() -> l.listen(s), "nccl4j-liveness-" + rank);
        t.setDaemon(true);
        t.start();
        return l;
    }

    /** The ranks known to be gone, in the order they were found. */
    List<Lost> lost() {
        return List.copyOf(lost.values());
    }

    boolean anyLost() {
        return !lost.isEmpty();
    }

    private void accept() {
        while (!closing) {
            try {
                Socket s = server.accept();
                s.setTcpNoDelay(true);
                peers.add(s);
                Thread t = new Thread(() -> serveOne(s), "nccl4j-liveness-peer");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                if (!closing) {
                    LOG.warn("nccl4j liveness: rank 0 stopped accepting: {}", e.toString());
                }
                return;
            }
        }
    }

    /** Rank 0: reads one rank's lines until its connection ends; tells the others when it ends without BYE. */
    private void serveOne(Socket s) {
        boolean bye = false;
        String[] hello = null;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("HELLO ")) {
                    hello = line.split(" ");
                    hellos.put(s, hello);
                } else if (line.equals("BYE")) {
                    bye = true;
                }
            }
        } catch (IOException e) {
            // the connection broke: the rank is gone unless it said goodbye
        }
        peers.remove(s);
        if (bye || closing || hello == null || hello.length < 4) {
            return;
        }
        String message = "LOST " + hello[1] + " " + hello[2] + " " + hello[3] + "\n";
        lost(message.trim().split(" "));
        for (Socket p : peers) {
            try {
                OutputStream out = p.getOutputStream();
                synchronized (p) {
                    out.write(message.getBytes(StandardCharsets.UTF_8));
                    out.flush();
                }
            } catch (IOException e) {
                // that one is going too; its own reader reports it
            }
        }
    }

    /** Every rank: reads rank 0's LOST lines; the end of the connection means rank 0 is gone. */
    private void listen(Socket s) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("LOST ")) {
                    lost(line.split(" "));
                } else if (line.equals("LEFT 0")) {
                    serverLeft = true;
                }
            }
        } catch (IOException e) {
            // as the end of the stream
        }
        if (!closing && !serverLeft && rank != 0) {
            lost.putIfAbsent(0, new Lost(0, null, -1));
            LOG.warn("nccl4j liveness: rank {} lost its connection to rank 0: rank 0 is gone", rank);
        }
    }

    private void lost(String[] f) {
        try {
            int r = Integer.parseInt(f[1]);
            if (r != rank) {
                lost.putIfAbsent(r, new Lost(r, f.length > 2 ? f[2] : null, f.length > 3 ? Long.parseLong(f[3]) : -1));
            }
        } catch (NumberFormatException e) {
            LOG.warn("nccl4j liveness: a line it cannot read: {}", String.join(" ", f));
        }
    }

    /** For tests: this rank's process dies (its connection ends without a goodbye). */
    void dropWithoutGoodbye() {
        closing = true;
        try {
            if (toServer != null) {
                toServer.close();
            }
            if (server != null) {
                server.close();
                for (Socket p : peers) {
                    p.close();
                }
            }
        } catch (IOException e) {
            // closed
        }
    }

    /** Says goodbye (this rank leaves on purpose) and closes the connections. */
    @Override
    public void close() {
        closing = true;
        Socket s = toServer;
        if (s != null) {
            try {
                synchronized (s) {
                    s.getOutputStream().write("BYE\n".getBytes(StandardCharsets.UTF_8));
                    s.getOutputStream().flush();
                }
                s.close();
            } catch (IOException e) {
                // gone already
            }
        }
        if (server != null) {
            for (Socket p : peers) {
                try {
                    synchronized (p) {
                        p.getOutputStream().write("LEFT 0\n".getBytes(StandardCharsets.UTF_8));
                        p.getOutputStream().flush();
                    }
                } catch (IOException e) {
                    // gone already
                }
            }
            try {
                server.close();
            } catch (IOException e) {
                // closed
            }
            for (Socket p : peers) {
                try {
                    p.close();
                } catch (IOException e) {
                    // closed
                }
            }
        }
    }
}
