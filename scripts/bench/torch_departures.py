#!/usr/bin/env python3
"""DepartureScenarios' counterpart for PyTorch: every way a rank leaves, with ProcessGroupNCCL at its defaults.

One process per rank (plain python with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT, i.e. env://, or under
torchrun; OMPI_COMM_WORLD_* are read too). Each rank runs the same program shape as
org.nccl4j.tools.harness.DepartureScenarios: init_process_group("nccl", device_id=...), then `try:` a loop of steps
`finally: destroy_process_group()` (Python's try-with-resources); a step fills a float32 tensor of --count elements
with rank + 1, all_reduces it, synchronizes, checks every element against the sum of 1..world and sleeps 50 ms.
At step --step, rank --rank (default: the last) does the scenario:

  kill              os.kill(own pid, SIGKILL)
  stop              os.kill(own pid, SIGSTOP)
  throw-inside      raises RuntimeError("data loader failed on rank R") inside the try/finally
  throw-outside     the same where no try/finally surrounds the process group (every rank runs that variant)
  exit              sys.exit(3) (SystemExit: the finally of the program shape runs, as it would for a torch user)
  abort-live        aborts the process group (torch.distributed.distributed_c10d._abort_process_group() where
                    this torch has it, else destroy_process_group(); the line after the EVENT names which), does
                    CPU work for --live-seconds (30) and exits 0
  skip              skips step S (its all_reduce), completes the others, destroys the group normally
  count             all_reduces the first half of the tensor at step S
  type              all_reduces the same bytes viewed as float16 (twice the count) at step S
  sigterm-rank      does not issue step S's all_reduce: SIGTERM to itself while the others are inside it
  sigterm-launcher  rank 0 prints the EVENT line at step S; every rank sleeps 200 ms after issuing the all_reduce,
                    so that the SIGTERM the harness sends torchrun (or every rank) finds them inside it
  cpu-stuck         a CPU loop of --stuck-seconds (60) at step S, no NCCL (departures.sh passes --timeout-s 20,
                    the counterpart of NCCL4J_TIMEOUT=20s)
  startup-init-term the start-up cell: rank R SIGTERMs itself as soon as init_process_group(device_id=...) returns
                    (the communicator made eagerly, NCCL's ncclCommInitRank done on every rank), before any step;
                    the others run the steps, and their first all_reduce waits for it ("rank 0: its first all_reduce
                    returned after X s" if it ever returns; departures.sh caps the wait at ROW_LIMIT)
  startup-init-term-lazy  the same without device_id: the process group is made lazily, the first all_reduce makes
                    the communicator, and the others' first all_reduce waits in NCCL's initialization
  fuzz, none        no departure (fuzz also prints READY after step 1 and CLOSING before the destroy)

Lines, each in one write to stdout: START rank=R t=<epoch ms> pid=P size=N device=D <scenario>;
EVENT rank=R t=<epoch ms> <scenario> at the event (for a signal, just before it); at the end
RESULT rank=R t=<epoch ms> ok, or RESULT rank=R t=<epoch ms> <ExceptionClass>: <message on one line>, after which
the exception propagates (Python prints it, exit status 1). --log-dir DIR sends this rank's stderr (torch's and
NCCL's messages, the traceback) to DIR/rank<R>.err, so that scripts/departures.sh can say what a torch user sees.
The options are checked before torch is imported (exit status 2 with the reason), so they are testable anywhere;
--check-api imports torch (no GPU needed) and prints its version and the abort API it would use.

  RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29800 python3 torch_departures.py kill
  torchrun --nproc-per-node 2 scripts/bench/torch_departures.py sigterm-launcher
"""
import argparse
import datetime
import os
import signal
import sys
import time

SCENARIOS = ["kill", "stop", "throw-inside", "throw-outside", "exit", "abort-live", "skip", "count", "type",
             "sigterm-rank", "sigterm-launcher", "cpu-stuck", "startup-init-term", "startup-init-term-lazy", "fuzz",
             "none"]
STARTUP = ("startup-init-term", "startup-init-term-lazy")
PROG = "torch_departures.py"


def line(text):
    """One line to stdout in one write (launchers that tag lines split a line written in pieces)."""
    sys.stdout.flush()
    os.write(1, (text + "\n").encode("utf-8", "replace"))


def now_ms():
    return int(time.time() * 1000)


def env_int(*names, default=None):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            return int(v)
    return default


def parse(argv):
    p = argparse.ArgumentParser(prog=PROG, description="Every way a rank leaves, with PyTorch's ProcessGroupNCCL "
                                "(see the module documentation).")
    p.add_argument("scenario", nargs="?", choices=SCENARIOS, metavar="SCENARIO",
                   help="one of: " + ", ".join(SCENARIOS))
    p.add_argument("--steps", type=int, default=8, help="steps (default 8)")
    p.add_argument("--step", type=int, default=3, help="the step of the event (default 3)")
    p.add_argument("--rank", type=int, default=-1, help="the rank that does it (default: the last)")
    p.add_argument("--count", type=int, default=1 << 20, help="floats per all_reduce (default 1048576)")
    p.add_argument("--sleep-ms", type=int, default=50, help="sleep after each step (default 50)")
    p.add_argument("--stuck-seconds", type=int, default=60, help="cpu-stuck's CPU loop (default 60)")
    p.add_argument("--live-seconds", type=int, default=30, help="abort-live's CPU work (default 30)")
    p.add_argument("--timeout-s", type=float, default=None,
                   help="init_process_group's timeout in seconds (default: torch's own)")
    p.add_argument("--log-dir", default=None, help="write this rank's stderr to LOG_DIR/rank<R>.err")
    p.add_argument("--row", default=None, help="a marker that departures.sh finds the process by (unused here)")
    p.add_argument("--check-api", action="store_true",
                   help="import torch, print its version, NCCL's and the abort API it has, and exit")
    a = p.parse_args(argv)
    if a.scenario is None and not a.check_api:
        p.error("a SCENARIO is required (one of: " + ", ".join(SCENARIOS) + ")")
    return a


def event_rank(a, world):
    """The rank that does the scenario; a list of what is wrong with the options for this world otherwise."""
    wrong = []
    if world < 2:
        wrong.append("%s needs 2 or more ranks, and this is a world of %d: launch it with torchrun or "
                     "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT" % (PROG, world))
    if a.steps < 1:
        wrong.append("--steps %d is not a number of steps: use 1 or more" % a.steps)
    elif not 1 <= a.step <= a.steps:
        wrong.append("--step %d is not one of the steps 1..%d (--steps %d)" % (a.step, a.steps, a.steps))
    if a.rank < -1 or (world >= 2 and a.rank >= world):
        wrong.append("--rank %d is not a rank of this world of %d: use 0..%d, or -1 for the last"
                     % (a.rank, world, world - 1))
    if a.count < 2:
        wrong.append("--count %d is too small: use 2 or more (count halves it)" % a.count)
    if min(a.sleep_ms, a.stuck_seconds, a.live_seconds) < 0:
        wrong.append("--sleep-ms, --stuck-seconds and --live-seconds cannot be negative")
    if a.timeout_s is not None and a.timeout_s <= 0:
        wrong.append("--timeout-s %s must be more than 0" % a.timeout_s)
    return (a.rank if a.rank >= 0 else world - 1), wrong


def describe(e):
    msg = " ".join(str(e).split())
    return type(e).__name__ + (": " + msg if msg else "")


def spin(seconds):
    end = time.monotonic() + seconds
    x = 1.0
    while time.monotonic() < end:
        for i in range(10000):
            x = (x + i) ** 0.5
    return x


def abort_api(dist):
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_abort_process_group"):
        return "torch.distributed.distributed_c10d._abort_process_group()"
    return "torch.distributed.destroy_process_group() (this torch has no _abort_process_group)"


def abort(dist):
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_abort_process_group"):
        c10d._abort_process_group()
    else:
        dist.destroy_process_group()
    return abort_api(dist)


def signal_self(sig):
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), sig)


def steps(a, me, world, who, torch, dist):
    """The loop of steps, with the scenario at step a.step on rank `who`."""
    n = a.count
    buf = torch.empty(n, dtype=torch.float32, device="cuda")
    expected = world * (world + 1) / 2
    line("START rank=%d t=%d pid=%d size=%d device=%d %s" % (me, now_ms(), os.getpid(), world,
                                                              torch.cuda.current_device(), a.scenario))

    def event(what):
        line("EVENT rank=%d t=%d %s" % (me, now_ms(), what))

    for step in range(1, a.steps + 1):
        mine = me == who and step == a.step
        tensor = buf
        if mine:
            s = a.scenario
            if s == "kill":
                event(s)
                signal_self(signal.SIGKILL)
                time.sleep(60)
                raise RuntimeError("kill -KILL of this process did not end it")
            if s == "stop":
                event(s)
                signal_self(signal.SIGSTOP)
                time.sleep(600)
                raise RuntimeError("kill -STOP of this process did not stop it")
            if s in ("throw-inside", "throw-outside"):
                event(s)
                raise RuntimeError("data loader failed on rank %d" % me)
            if s == "exit":
                event(s)
                sys.exit(3)
            if s == "abort-live":
                event(s)
                api = abort(dist)
                line("rank %d: aborted its process group with %s and lives on: CPU work for %d s, then exit 0"
                     % (me, api, a.live_seconds))
                spin(a.live_seconds)
                return
            if s == "skip":
                event(s)
                continue
            if s == "count":
                tensor = buf[: n // 2]
            if s == "type":
                tensor = buf.view(torch.float16)
            if s == "sigterm-rank":
                event(s)
                signal_self(signal.SIGTERM)
                time.sleep(60)
                raise RuntimeError("kill -TERM of this process did not end it")
            if s == "cpu-stuck":
                event(s)
                spin(a.stuck_seconds)
        buf.fill_(me + 1)
        terminate = a.scenario == "sigterm-launcher" and step == a.step
        if terminate and me == 0:
            event(a.scenario)
        if mine and a.scenario in ("count", "type"):
            event("%s (%d x %s)" % (a.scenario, tensor.numel(), str(tensor.dtype).replace("torch.", "")))
        t_first = time.monotonic()
        dist.all_reduce(tensor)
        if terminate:
            time.sleep(0.2)
        torch.cuda.synchronize()
        if step == 1 and a.scenario in STARTUP:
            line("rank %d: its first all_reduce returned after %.2f s" % (me, time.monotonic() - t_first))
        bad = (buf != expected).nonzero()
        if bad.numel():
            i = int(bad[0][0])
            raise RuntimeError("step %d: element %d is %s, expected %s (the sum of 1..%d)"
                               % (step, i, float(buf[i]), expected, world))
        if a.scenario == "fuzz" and step == 1:
            line("READY rank=%d t=%d" % (me, now_ms()))
        time.sleep(a.sleep_ms / 1000.0)
    if a.scenario == "fuzz":
        line("CLOSING rank=%d t=%d" % (me, now_ms()))


def run(a, me, world, who):
    import torch
    import torch.distributed as dist

    dev = os.environ.get("NCCL4J_DEVICE")
    count = torch.cuda.device_count()
    dev = int(dev) if dev not in (None, "") else env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                          default=0) % max(1, count)
    torch.cuda.set_device(dev)
    lazy = a.scenario == "startup-init-term-lazy"
    kw = {"backend": "nccl", "rank": me, "world_size": world}
    if not lazy:
        kw["device_id"] = torch.device("cuda", dev)
    if a.timeout_s is not None:
        kw["timeout"] = datetime.timedelta(seconds=a.timeout_s)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group(**kw)
    if a.scenario in STARTUP and me == who:
        how = ("no device_id: the first collective makes the communicator" if lazy
               else "device_id=cuda:%d: the communicator made eagerly" % dev)
        line("EVENT rank=%d t=%d %s (init_process_group returned; %s)" % (me, now_ms(), a.scenario, how))
        signal_self(signal.SIGTERM)
        time.sleep(60)
        raise RuntimeError("kill -TERM of this process did not end it")
    if a.scenario == "throw-outside":
        steps(a, me, world, who, torch, dist)
        dist.destroy_process_group()
        return
    try:
        steps(a, me, world, who, torch, dist)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def main(argv=None):
    a = parse(argv)
    if a.check_api:
        import torch
        import torch.distributed as dist
        try:
            nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception as e:  # noqa: BLE001 - a torch without NCCL says so
            nccl = "unknown (%s)" % describe(e)
        print("torch %s, NCCL %s, abort: %s" % (torch.__version__, nccl, abort_api(dist)))
        return 0
    me = env_int("RANK", "OMPI_COMM_WORLD_RANK", default=0)
    world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", default=1)
    who, wrong = event_rank(a, world)
    if wrong:
        print("%s: %s" % (PROG, "; ".join(wrong)), file=sys.stderr)
        return 2
    if a.log_dir:
        fd = os.open(os.path.join(a.log_dir, "rank%d.err" % me), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        run(a, me, world, who)
    except SystemExit:
        raise
    except BaseException as e:
        line("RESULT rank=%d t=%d %s" % (me, now_ms(), describe(e)))
        raise
    line("RESULT rank=%d t=%d ok" % (me, now_ms()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
