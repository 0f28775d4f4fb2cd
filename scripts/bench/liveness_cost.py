#!/usr/bin/env python3
"""The parts of scripts/bench/liveness-cost.sh that read /proc, jars and departures.sh's TSV, and its report.

  liveness_cost.py sample FILE RANK:PID...   one look at each rank's process, written to FILE (JSON)
  liveness_cost.py side DIR                  one line about the nccl4j jars of DIR (a bundle's lib/ or a folder of
                                             jars): auth=yes|no core=<sha256> examples=<sha256> native=<sha256>
                                             tools=<sha256>
  liveness_cost.py report OUT_DIR            OUT_DIR/liveness-cost.md and liveness-cost.tsv, the markdown printed

sample: for each process, /proc/PID/stat's utime + stime (the whole process, exited threads included, in clock
ticks) and, for every thread, /proc/PID/task/TID/comm (the name, which Linux cuts to 15 characters: every liveness
thread reads "nccl4j-liveness"), the first field of /proc/PID/task/TID/schedstat (the thread's CPU time in ns; null
where the kernel has no schedstat) and the thread's utime + stime (ticks), with the monotonic clock's time of the
look. A process that is gone (or a zombie) is written "alive": false. The variable LIVENESS_COST_PROC names another
/proc (for tests).

side: auth=yes when the nccl4j-core jar holds org/nccl4j/launch/JobSecret.class (the job secret's authentication,
commit 0cbe747 on), sha256 (first 12 hex digits) of each of the four jars (not the -tests, -sources or -javadoc
ones); exit status 1 when a jar is missing or unreadable, saying which.

report: OUT_DIR/runs.tsv (written by liveness-cost.sh: round, side, the run's heartbeat directory, what went wrong
there or nothing, its departures directory, departures.sh's exit status) and OUT_DIR/meta.tsv (key, value: the
lines of the report's head). A heartbeat directory holds sample1.json and sample2.json, rank<R>.log (the lines
DepartureScenarios prints: START, RESULT) and exit<R> (the rank's exit status); a departures directory is
departures.sh's OUT_DIR (departures.tsv). Per rank and run:
  liveness CPU (us/s): the sum over the threads named nccl4j-liveness* at the second sample of their CPU time there
    minus their CPU time at the first (from 0 for a thread that was not there yet), over the time between the
    samples; a liveness thread of the first sample gone by the second is not counted ("gone" in the details).
    Without schedstat, a thread's utime + stime stands in for its CPU time, named under Problems (too coarse)
  process CPU (ms/s): the same over all the process's threads; and, in the details, utime + stime of
    /proc/PID/stat between the samples (exited threads included, but in clock ticks: 10 ms at CLK_TCK 100)
  lost-rank notice (s): departures.sh's time from the EVENT (the last rank's SIGKILL or SIGSTOP) to each other
    rank's end; per run the last of them and their mean
Per measure: each round's figure, the median over the rounds per side, after - before of the medians, the rounds'
spread (the larger of the two sides' ranges) and whether |after - before| is within it. Exit status 0 when every
run has all its figures and nothing went wrong, 1 when a figure is missing or something went wrong (a rank that
did not exit 0, a departures row outside its bound: under Problems), 2 on bad arguments.
"""
import hashlib
import json
import os
import statistics
import sys
import time
import zipfile
from datetime import datetime, timezone

LIVENESS = "nccl4j-liveness"
AUTH_CLASS = "org/nccl4j/launch/JobSecret.class"
JARS = ("core", "examples", "native", "tools")
SIDES = ("before", "after")
SCENARIOS = ("kill", "stop")


# ---------------------------------------------------------------- sample

def read(path):
    with open(path) as f:
        return f.read()


def state_ticks(stat):
    """(state, utime + stime) of a /proc stat line, whose name may hold spaces and parentheses."""
    rest = stat[stat.rindex(")") + 2:].split()
    return rest[0], int(rest[11]) + int(rest[12])     # fields 3, 14 and 15


def look(proc, pid):
    """One process: its state, utime + stime and threads, or alive False."""
    base = os.path.join(proc, str(pid))
    t0 = time.monotonic_ns()
    try:
        state, ticks = state_ticks(read(os.path.join(base, "stat")))
        tids = os.listdir(os.path.join(base, "task"))
    except (OSError, ValueError, IndexError):
        return {"pid": pid, "alive": False, "t_ns": t0}
    threads = []
    for tid in sorted(tids, key=lambda t: int(t) if t.isdigit() else -1):
        task = os.path.join(base, "task", tid)
        try:
            comm = read(os.path.join(task, "comm")).rstrip("\n")
            _, tticks = state_ticks(read(os.path.join(task, "stat")))
        except (OSError, ValueError, IndexError):
            continue                             # gone between the listing and the read
        try:
            cpu = int(read(os.path.join(task, "schedstat")).split()[0])
        except (OSError, ValueError, IndexError):
            cpu = None                           # a kernel without schedstat (gVisor's /proc has none)
        threads.append({"tid": int(tid), "comm": comm, "cpu_ns": cpu, "ticks": tticks})
    t1 = time.monotonic_ns()
    return {"pid": pid, "alive": state not in ("Z", "X"), "state": state, "t_ns": (t0 + t1) // 2,
            "stat_ticks": ticks, "threads": threads}


def sample(path, pairs):
    proc = os.environ.get("LIVENESS_COST_PROC", "/proc")
    ranks = {}
    for p in pairs:
        rank, _, pid = p.partition(":")
        if not rank.isdigit() or not pid.isdigit():
            print(f"liveness_cost.py sample: {p} is not RANK:PID", file=sys.stderr)
            return 2
        ranks[rank] = look(proc, int(pid))
    doc = {"clk_tck": os.sysconf("SC_CLK_TCK"), "ranks": ranks}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


# ---------------------------------------------------------------- side

def jar_of(d, name):
    """The one nccl4j-NAME-*.jar of d that is not a -tests, -sources, -javadoc or platform jar, or None."""
    found = [f for f in sorted(os.listdir(d)) if f.startswith(f"nccl4j-{name}-") and f.endswith(".jar")
             and not f.endswith(("-tests.jar", "-sources.jar", "-javadoc.jar", "-linux-x86_64.jar"))]
    return os.path.join(d, found[0]) if len(found) == 1 else None


def side(d):
    lib = os.path.join(d, "lib") if os.path.isdir(os.path.join(d, "lib")) else d
    if not os.path.isdir(lib):
        print(f"liveness_cost.py side: {d} is not a directory", file=sys.stderr)
        return 1
    out = []
    for name in JARS:
        jar = jar_of(lib, name)
        if jar is None:
            print(f"liveness_cost.py side: {lib} holds no single nccl4j-{name}-*.jar", file=sys.stderr)
            return 1
        try:
            with open(jar, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()[:12]
            if name == "core":
                with zipfile.ZipFile(jar) as z:
                    auth = "yes" if AUTH_CLASS in z.namelist() else "no"
        except (OSError, zipfile.BadZipFile) as e:
            print(f"liveness_cost.py side: {jar} is unreadable: {e}", file=sys.stderr)
            return 1
        out.append(f"{name}={sha}")
    print(f"auth={auth} " + " ".join(out))
    return 0


# ---------------------------------------------------------------- report: the figures

def load_json(path):
    try:
        with open(path) as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, f"no {os.path.basename(path)}"
    except (OSError, ValueError) as e:
        return None, f"{os.path.basename(path)} unreadable ({e.__class__.__name__})"


def liveness(threads):
    return {tid: t for tid, t in threads.items() if t["comm"].startswith(LIVENESS)}


def with_cpu(threads, clk_tck):
    """tid -> thread, each with "ns": its schedstat CPU time, else (no schedstat) its utime + stime in ns."""
    out = {}
    for t in threads:
        ns = t["cpu_ns"] if t.get("cpu_ns") is not None else t["ticks"] * 1e9 / clk_tck
        out[t["tid"]] = dict(t, ns=ns)
    return out


def window_ns(first, second):
    """CPU ns between two looks at threads (with_cpu) of one process: (ns, appeared, gone). A thread of the second
    look counts its CPU time then minus at the first look, or from 0 when it was not there (or its id was reused:
    its time went down); a thread gone by the second look is not counted."""
    ns = 0
    appeared = 0
    for tid, t in second.items():
        before = first.get(tid)
        if before is not None and before["ns"] <= t["ns"]:
            ns += t["ns"] - before["ns"]
        else:
            ns += t["ns"]
            appeared += 1
    return ns, appeared, sum(1 for tid in first if tid not in second)


def rank_figures(a, b, clk_tck):
    """One rank's figures between samples a and b: dict, or (None, why)."""
    if not a.get("alive") or not b.get("alive"):
        which = "first" if not a.get("alive") else "second"
        return None, f"its process (pid {a.get('pid')}) was gone at the {which} sample"
    secs = (b["t_ns"] - a["t_ns"]) / 1e9
    if secs <= 0:
        return None, "the samples are not in order"
    ta, tb = with_cpu(a["threads"], clk_tck), with_cpu(b["threads"], clk_tck)
    la, lb = liveness(ta), liveness(tb)
    all_ns, _, _ = window_ns(ta, tb)
    if not lb:
        names = sorted({t["comm"] for t in tb.values()})
        return None, "no thread named nccl4j-liveness* (threads: " + ", ".join(names[:12]) + \
            (", ..." if len(names) > 12 else "") + ")"
    ns, appeared, gone = window_ns(la, lb)
    ticks = b["stat_ticks"] - a["stat_ticks"]
    ticks_only = any(t.get("cpu_ns") is None for t in list(ta.values()) + list(tb.values()))
    return {"liveness_us_s": ns / 1e3 / secs, "process_ms_s": all_ns / 1e6 / secs,
            "process_stat_ms_s": ticks / clk_tck * 1e3 / secs, "threads": len(lb), "appeared": appeared,
            "gone": gone, "window_s": secs, "ticks_only": ticks_only}, None


def log_line(path, prefix):
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith(prefix):
                    return line.rstrip("\n")
    except OSError:
        pass
    return None


def heartbeat(d):
    """A heartbeat run: (figures, problems). figures: per rank dicts, plus exits and results."""
    problems = []
    s1, why1 = load_json(os.path.join(d, "sample1.json"))
    s2, why2 = load_json(os.path.join(d, "sample2.json"))
    ranks = {}
    exits = {}
    results = {}
    names = set()
    for s in (s1, s2):
        if s:
            names |= set(s.get("ranks", {}))
    for r in sorted(names, key=int):
        try:
            exits[r] = read(os.path.join(d, f"exit{r}")).split()[0]
        except (OSError, IndexError):
            exits[r] = "-"
        res = log_line(os.path.join(d, f"rank{r}.log"), f"RESULT rank={r} ")
        results[r] = res.split(" ", 3)[3] if res and res.count(" ") >= 3 else "no RESULT line"
    if why1 or why2:
        problems.append(why1 or why2)
        return None, exits, results, problems
    clk = s2.get("clk_tck") or 100
    for r in sorted(names, key=int):
        a, b = s1["ranks"].get(r), s2["ranks"].get(r)
        if a is None or b is None:
            problems.append(f"rank {r} is missing from a sample")
            continue
        f, why = rank_figures(a, b, clk)
        if f is None:
            problems.append(f"rank {r}: {why}")
        else:
            ranks[r] = f
    if len(ranks) < 2 or "0" not in ranks:
        if not problems:
            problems.append("fewer than 2 ranks sampled")
        return None, exits, results, problems
    if problems:
        return None, exits, results, problems
    coarse = [r for r in ranks if ranks[r]["ticks_only"]]
    if coarse:
        problems.append("no /proc/PID/task/TID/schedstat here (rank " + ", ".join(coarse) + "): CPU times are "
                        f"utime + stime in clock ticks of {1000 / clk:g} ms, too coarse for the liveness threads")
    return ranks, exits, results, problems


def departures(d):
    """departures.sh's rows of one run: {scenario: row dict} and problems."""
    path = os.path.join(d, "departures.tsv")
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}, [f"no {path}"]
    if not lines:
        return {}, [f"{path} is empty"]
    head = lines[0].split("\t")
    rows = {}
    problems = []
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t")))
        sc = row.get("scenario")
        if sc not in SCENARIOS:
            continue
        ends = []
        for r in row.get("measured", "").split():
            e = row.get(f"end{r}", "")
            try:
                ends.append(float(e))
            except ValueError:
                problems.append(f"{sc}: rank {r} has no time ({e or 'none'})")
                ends = None
                break
        if ends:
            row["last_s"] = max(ends)
            row["mean_s"] = sum(ends) / len(ends)
        elif ends is not None:
            problems.append(f"{sc}: no rank was timed")
        if row.get("within") != "yes":
            problems.append(f"{sc}: not within its bound ({row.get('within')}; worst {row.get('worst') or '-'})")
        rows[sc] = row
    for sc in SCENARIOS:
        if sc not in rows:
            problems.append(f"{sc}: no row")
    return rows, problems


# ---------------------------------------------------------------- report: the markdown

def esc(s):
    return s.replace("|", "\\|")


def cut(s, n):
    return s if len(s) <= n else s[:n - 3] + "..."


def fmt(v, digits):
    return "n/a" if v is None else f"{v:.{digits}f}"


def side_text(v):
    """meta.tsv's side line (WHERE: auth=yes core=SHA examples=SHA native=SHA tools=SHA), as the report says it."""
    where, sep, info = v.rpartition(": ")
    kv = dict(p.split("=", 1) for p in info.split() if "=" in p)
    if not sep or set(kv) != {"auth", *JARS}:
        return v
    return (f"{where}; the job secret's authentication: {kv['auth']}; sha256 of the jars: "
            + ", ".join(f"{j} {kv[j]}" for j in JARS))


def read_tsv(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def report(out_dir):
    try:
        runs = read_tsv(os.path.join(out_dir, "runs.tsv"))
    except OSError as e:
        print(f"liveness_cost.py report: cannot read {out_dir}/runs.tsv: {e.strerror}", file=sys.stderr)
        return 2
    meta = []
    try:
        meta = [(m[0], m[1] if len(m) > 1 else "") for m in read_tsv(os.path.join(out_dir, "meta.tsv"))]
    except OSError:
        pass
    meta_d = {}
    for k, v in meta:
        meta_d.setdefault(k, []).append(v)

    def first(k, default=""):
        return meta_d.get(k, [default])[0]

    rounds = sorted({int(r[0]) for r in runs})
    size = int(first("size", "4"))
    others = f"ranks 1-{size - 1} mean" if size > 2 else "rank 1"
    # measure key -> (label, digits); value per (round, side)
    measures = [
        ("hb_r0_liveness", "heartbeat CPU, rank 0 (liveness threads, us/s)", 1),
        ("hb_others_liveness", f"heartbeat CPU, {others} (liveness threads, us/s)", 1),
        ("hb_r0_process", "process CPU, rank 0 (all threads, ms/s)", 2),
        ("hb_others_process", f"process CPU, {others} (all threads, ms/s)", 2),
        ("kill_last", "kill: the last rank's end after the SIGKILL (s)", 2),
        ("kill_mean", "kill: the ranks' mean end after the SIGKILL (s)", 2),
        ("stop_last", "stop: the last rank's end after the SIGSTOP (s)", 2),
        ("stop_mean", "stop: the ranks' mean end after the SIGSTOP (s)", 2),
    ]
    values = {}
    hb_details = []
    dep_details = []
    problems = []
    for run in runs:
        rnd, sd, hb_dir, hb_note, dep_dir, dep_status = (run + [""] * 6)[:6]
        rnd = int(rnd)
        where = f"round {rnd} {sd}"
        if hb_note:
            problems.append(f"{where}: heartbeat: {hb_note}")
        ranks, exits, results, probs = heartbeat(os.path.join(out_dir, hb_dir)) if hb_dir else (None, {}, {}, [])
        problems += [f"{where}: heartbeat: {p}" for p in probs]
        if ranks:
            rest = [ranks[r] for r in ranks if r != "0"]
            values["hb_r0_liveness", rnd, sd] = ranks["0"]["liveness_us_s"]
            values["hb_others_liveness", rnd, sd] = statistics.mean(f["liveness_us_s"] for f in rest)
            values["hb_r0_process", rnd, sd] = ranks["0"]["process_ms_s"]
            values["hb_others_process", rnd, sd] = statistics.mean(f["process_ms_s"] for f in rest)
            window = ranks["0"]["window_s"]
            threads = " / ".join(str(ranks[r]["threads"]) for r in sorted(ranks, key=int))
            newgone = " / ".join(f"{ranks[r]['appeared']}, {ranks[r]['gone']}" for r in sorted(ranks, key=int))
            per = " / ".join(fmt(ranks[r]["liveness_us_s"], 1) for r in sorted(ranks, key=int))
            stat = " / ".join(fmt(ranks[r]["process_stat_ms_s"], 1) for r in sorted(ranks, key=int))
        else:
            window, threads, newgone, per, stat = None, "-", "-", "-", "-"
        ex = " ".join(f"r{r}={s}" for r, s in exits.items()) or "-"
        res = sorted(set(results.values())) or ["-"]
        hb_details.append(f"| {rnd} | {sd} | {fmt(window, 2)} | {per} | {threads} | {newgone} | {stat} | "
                          f"{esc(ex)} | {esc(cut('; '.join(res), 100))} |")
        rows, probs = departures(os.path.join(out_dir, dep_dir)) if dep_dir else ({}, ["not run"])
        problems += [f"{where}: departures: {p}" for p in probs]
        if dep_status not in ("", "0") and not probs:
            problems.append(f"{where}: departures: departures.sh exited {dep_status}")
        for sc in SCENARIOS:
            row = rows.get(sc)
            if row is None:
                continue
            if "last_s" in row:
                values[f"{sc}_last", rnd, sd] = row["last_s"]
                values[f"{sc}_mean", rnd, sd] = row["mean_s"]
            measured = row.get("measured", "").split()
            ends = ", ".join(f"r{r} {row.get(f'end{r}', '') or '-'}" for r in measured)
            left = [str(r) for r in range(size) if str(r) not in measured]
            if left:
                ends += f" (r{', r'.join(left)} left: not timed)"
            dep_details.append(f"| {rnd} | {sd} | {sc} | {row.get('within', '')} | {esc(ends)} | "
                               f"{esc(row.get('exits', ''))} | {esc(cut(row.get('seen', ''), 90))} |")

    def med(key, sd):
        v = [values[key, r, sd] for r in rounds if (key, r, sd) in values]
        return statistics.median(v) if v else None

    def spread(key):
        s = []
        for sd in SIDES:
            v = [values[key, r, sd] for r in rounds if (key, r, sd) in values]
            if len(v) >= 2:
                s.append(max(v) - min(v))
        return max(s) if s else None

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = ["# Liveness channel: its cost before and after", ""]
    md.append(f"{first('date', when)} on {first('host', '?')}. {len(rounds)} round(s), each the before side, then "
              f"the after side; {size} ranks, one per GPU (plain `java`, as departures.sh's java launcher).")
    md.append("")
    md.append(f"- Command: `{first('command', '?')}`")
    if first("variables"):
        md.append(f"- Variables: {first('variables')}")
    gpus = meta_d.get("gpu", [])
    md.append(f"- GPUs: {'; '.join(gpus) if gpus else '?'}")
    md.append(f"- CPU: {first('cpu', '?')}; kernel {first('kernel', '?')}; Java: {first('java', '?')}")
    for sd in SIDES:
        if first(sd):
            md.append(f"- {sd}: {side_text(first(sd))}")
    if first("secret"):
        md.append(f"- Job secret: {first('secret')}")
    md += ["", "## Summary", "",
           "| measure | before | after | after - before | rounds' spread | within it |",
           "|---|---:|---:|---:|---:|---|"]
    tsv = ["measure\tround\tside\tvalue"]
    for key, label, dg in measures:
        b, a = med(key, "before"), med(key, "after")
        delta = a - b if a is not None and b is not None else None
        sp = spread(key)
        within = "n/a" if delta is None or sp is None else ("yes" if abs(delta) <= sp else "no")
        md.append(f"| {label} | {fmt(b, dg)} | {fmt(a, dg)} | {'n/a' if delta is None else f'{delta:+.{dg}f}'} | "
                  f"{fmt(sp, dg)} | {within} |")
        for r in rounds:
            for sd in SIDES:
                if (key, r, sd) in values:
                    tsv.append(f"{key}\t{r}\t{sd}\t{values[key, r, sd]:.6g}")
    md += ["", "Medians over the rounds. The rounds' spread: the larger of the two sides' ranges (largest round "
           "minus smallest; n/a with one round); within it: |after - before| is at most the spread.", ""]

    def table(keys):
        head = "| measure | side | " + " | ".join(f"round {r}" for r in rounds) + " | median |"
        lines = [head, "|---|---|" + "---:|" * (len(rounds) + 1)]
        for key, label, dg in measures:
            if key not in keys:
                continue
            for sd in SIDES:
                cells = [fmt(values.get((key, r, sd)), dg) for r in rounds]
                lines.append(f"| {label if sd == 'before' else ''} | {sd} | " + " | ".join(cells) +
                             f" | {fmt(med(key, sd), dg)} |")
        return lines

    md += ["## Heartbeat CPU", "",
           f"{size} ranks run `DepartureScenarios none --steps {first('hb_steps', '?')} --sleep-ms "
           f"{first('hb_sleep_ms', '?')} --count {first('hb_count', '?')}` (a checked all-reduce, then a sleep, "
           f"each step: the process is mostly idle). {first('hb_settle', '?')} s after every rank's START line, "
           f"and {first('hb_window', '?')} s later, each rank's threads are read from /proc: a thread's CPU time is "
           "the first field of /proc/PID/task/TID/schedstat (ns); the liveness threads are those named "
           "nccl4j-liveness* (comm: Linux keeps 15 characters). Liveness CPU: over the threads there at the second "
           "look, CPU time then minus at the first look (from 0 for a thread that appeared in between; a thread "
           "gone by the second look is not counted), per second between the looks. Process CPU: the same over all "
           "the process's threads (the details add utime + stime of /proc/PID/stat, which counts exited threads "
           "too, in clock ticks). Rank 0 serves the channel; the others are its clients.", ""]
    md += table({"hb_r0_liveness", "hb_others_liveness", "hb_r0_process", "hb_others_process"})
    md += ["", "Per run, rank by rank (0 / 1 / ...): the liveness CPU, the liveness threads at the second look, how "
               "many of them appeared since the first and how many of the first were gone, and the process's utime "
               "+ stime per second (clock ticks: coarse).", "",
           "| round | side | window s | liveness us/s | liveness threads | appeared, gone | utime + stime ms/s | "
           "exits | RESULT |",
           "|---|---|---:|---|---|---|---|---|---|"] + hb_details
    md += ["", "## Lost-rank notice", "",
           "`scripts/departures.sh` with `SCENARIOS=\"kill stop\" LAUNCHERS=java CONFIGS="
           f"{first('config', '?')}`: the last rank SIGKILLs itself (its peers learn when its liveness connection "
           "ends) or SIGSTOPs itself (they learn when its heartbeats stop: NCCL4J_LIVENESS_TIMEOUT, 4 s); each "
           "other rank's end is timed from that EVENT. Per run: the last of those ends and their mean.", ""]
    md += table({"kill_last", "kill_mean", "stop_last", "stop_mean"})
    md += ["", "| round | side | scenario | within bound | each rank's end (s after the EVENT) | exits | what a rank "
               "saw |", "|---|---|---|---|---|---|---|"] + dep_details
    if problems:
        md += ["", "## Problems", ""] + [f"- {esc(p)}" for p in problems]
    text = "\n".join(md) + "\n"
    with open(os.path.join(out_dir, "liveness-cost.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "liveness-cost.tsv"), "w") as f:
        f.write("\n".join(tsv) + "\n")
    sys.stdout.write(text)
    missing = any((key, r, sd) not in values for key, _, _ in measures for r in rounds for sd in SIDES)
    return 1 if missing or problems else 0


def main(argv):
    usage = "usage: liveness_cost.py sample FILE RANK:PID... | side DIR | report OUT_DIR"
    if len(argv) >= 3 and argv[0] == "sample":
        return sample(argv[1], argv[2:])
    if len(argv) == 2 and argv[0] == "side":
        return side(argv[1])
    if len(argv) == 2 and argv[0] == "report":
        return report(argv[1])
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
