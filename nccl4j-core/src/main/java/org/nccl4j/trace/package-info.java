/**
 * The flight recorder: the last operations of each communicator, kept always at no cost per operation but a few
 * array stores, and dumped as one JSON file per rank when something goes wrong, for {@code scripts/nccl4j-trace}
 * to compare across ranks.
 *
 * <ul>
 *   <li>{@link org.nccl4j.trace.FlightRecorder}: the ring of one communicator (its capacity from
 *       {@code NCCL4J_TRACE_BUFFER}, default 2000); {@code record} allocates nothing.</li>
 *   <li>{@link org.nccl4j.trace.TraceDump}: one rank's dump (and, in {@link org.nccl4j.trace.TraceDump.ThreadStack},
 *       the Java stacks of the threads that issued its operations), written atomically as
 *       {@code <dir>/nccl4j-trace-rank<R>-<host>-<pid>.json} and read back with errors that name the file and the
 *       field.</li>
 *   <li>{@link org.nccl4j.trace.TraceConfig}: {@code NCCL4J_TRACE_BUFFER} and {@code NCCL4J_TRACE_DIR} (default
 *       {@code ${java.io.tmpdir}/nccl4j-trace}).</li>
 *   <li>{@link org.nccl4j.trace.TraceOperation}: the operations and their stable codes.</li>
 * </ul>
 *
 * <h2>The dump's format (version 1)</h2>
 * A JSON object, written with Jackson's streaming generator (jackson-core), UTF-8, indented. Every field is
 * always written, null where it has no value; a reader ignores fields it does not know.
 * <pre>
 * {
 *   "format": "nccl4j-trace",          always
 *   "version": 1,                       the format's version
 *   "host": "node7",                    host name of the process
 *   "pid": 4242,                        its process id
 *   "rank": 1,                          communicator rank, 0 &lt;= rank &lt; size
 *   "size": 4,                          communicator size (the analyzer's expected number of dumps)
 *   "communicator": null,               the communicator's name (CommConfig commName) or null
 *   "ncclVersion": "2.28.3",            the loaded NCCL
 *   "dumpedAt": "2025-01-31T12:00:00.123456Z",   ISO-8601 instant
 *   "reason": "timeout",                "timeout", "remote error", "error", "on demand", "exit",
 *                                       "watchdog stuck", ...
 *   "failure": null,                    the failure's text, or null
 *   "capacity": 2000,                   the ring's capacity (entries holds at most this many)
 *   "lastEnqueued": 7,                  the last sequence number recorded (0: none)
 *   "lastCompleted": 6,                 every operation up to this one is completed (0: none)
 *   "environment": {"NCCL_DEBUG": "WARN", ...},   NCCL_* and NCCL4J_* variables, sorted by name
 *   "entries": [                        oldest first, sequence numbers increasing
 *     {
 *       "seq": 7,                       the communicator's sequence number, from 1
 *       "operation": "allReduce",       allReduce, broadcast, reduce, allGather, reduceScatter, alltoAll,
 *                                       gather, scatter, send, recv, group, graphLaunch
 *       "count": 1024,                  elements (per rank for allGather/reduceScatter, per peer for alltoAll)
 *       "dataType": "ncclFloat32",      NCCL's name (nccl.h): ncclInt8, ncclUint8, ncclInt32, ncclUint32,
 *                                       ncclInt64, ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16,
 *                                       ncclFloat8e4m3, ncclFloat8e5m2; or null
 *       "reduceOp": "ncclSum",          ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, ncclPreMulSum(N); or null
 *       "peer": null,                   root of broadcast/reduce/gather/scatter, other rank of send/recv; or null
 *       "bytes": 4096,                  bytes this rank sends or reduces
 *       "stream": "0x7f3a2c000b40",     cudaStream_t in hexadecimal
 *       "enqueuedAt": "2025-01-31T11:59:59.876543Z",  ISO-8601 instant, microseconds
 *       "state": "ENQUEUED",            ENQUEUED, COMPLETED or FAILED
 *       "completedAfterMicros": null    microseconds from enqueueing to the completed/failed mark; null if ENQUEUED
 *     }
 *   ],
 *   "threads": [                        the threads that issued the operations (TraceDump.withThreads); [] if none
 *     {
 *       "name": "main",                 the thread's name
 *       "id": 1,                        its id (Thread.getId)
 *       "state": "RUNNABLE",            NEW, RUNNABLE, BLOCKED, WAITING, TIMED_WAITING, TERMINATED
 *       "frames": [                     innermost first, as StackTraceElement.toString writes them (at most 256)
 *         "org.nccl4j.jni.NcclNative.ncclGroupEnd(Native Method)",
 *         "com.example.Train.step(Train.java:42)"
 *       ]
 *     }
 *   ]
 * }
 * </pre>
 * {@code "threads"} came later than the rest, within version 1 (a new field, which older readers ignore): a reader
 * takes a dump without it as one without thread stacks.
 */
package org.nccl4j.trace;
