#!/usr/bin/env python3
"""Kernel durations and the gaps between kernels, C against Java, from Nsight Systems or CUPTI traces.

Reads the CSV files that `nsys stats -r cuda_gpu_trace -f csv` wrote for each rank of each side (made by
scripts/bench/perf-timeline.sh: <dir>/<side>-rank<r>_cuda_gpu_trace.csv, side = c or java) and prints, per side and
rank, the median duration of the NCCL kernels of the measured size and the median idle gap between one such
kernel and the next on the same stream. A per-operation difference between C and Java then shows as longer
kernels (the GPU does more or slower work) or as longer gaps (the next kernel reaches the GPU later).

Only kernels whose name contains "nccl" and that last at least --min-us are kept, which leaves out the 8-byte
all-reduces nccl4j-perf uses as a barrier between measurements. Gaps longer than --max-gap-us are the ends of
timed loops (a barrier, a host synchronization) and are left out of the gap statistics.

With --cupti it reads instead the trace-<pid>.csv files of scripts/bench/native/kernel_trace.c (the CUPTI kernel tracer
that scripts/bench/perf-timeline.sh uses without nsys), all of C_DIR for C and all of JAVA_DIR for Java: lines
start_ns,end_ns,device,stream,correlation_id,name, and '#' notes ("# dropped N": CUPTI lost N records). Traces of
an older kernel_trace.c, lines start_ns,end_ns,device,stream,name, are read too: the two are told apart by the 5th
field, which is a correlation id when it is all digits (a kernel name, which may contain commas, never is; counting
fields would not do). A trace holds every kernel of the process, so the timed loops are taken out of it: on each
device and stream, the runs of at least --min-run consecutive NCCL kernels each of which starts less than
--max-gap-us after the previous one ends (a warm-up is shorter; a host synchronization, a barrier or the end of a
loop leaves a longer gap). Per trace, the kernels of those runs: their duration and the gap from one kernel's end to
the next one's start (median, p10, p90), and the mean start-to-start time per operation (duration plus gap); then
Java - C of the medians.

With --api, also the CUDA API calls per operation, from the trace-<pid>-api.csv beside each trace-<pid>.csv
(kernel_trace.c writes them with KERNEL_TRACE_API=1: lines start_ns,end_ns,kind,cbid,thread_id,correlation_id,name,
kind driver or runtime). For each timed loop: the API records with the correlation ids of its first and of its last
kernel are their launches (where several records have a kernel's id, as a runtime launch and the driver launch
within it, the one that starts first); on the thread of those launches, the calls that start from the first launch
on and before the last one are the calls of (kernels - 1) operations. Per side, the calls per operation of each
(kind, name) and the time they take per operation (the sum of end - start), the mean over the side's timed loops;
then the names whose calls per operation differ between C and Java by 0.05 or more, and the API time per operation
of each side. A loop whose launches are not found (no -api.csv, a trace without correlation ids, dropped records)
is left out of it, with a note.

  scripts/bench/timeline_report.py DIR [--min-us 50] [--max-gap-us 100]
  scripts/bench/timeline_report.py --cupti C_DIR JAVA_DIR [--max-gap-us 20] [--min-run 100] [--api]
                                                          (the fallback without nsys where the tracer was built)
  scripts/bench/timeline_report.py --op-times C.json JAVA.json     (the fallback without nsys or tracer: the "op_time_us"
                                                           records that --op_times 1 adds to -J files, side by side)
"""
import argparse
import bisect
import csv
import glob
import os
import re
import statistics
import sys


def column(header, *names):
    for i, h in enumerate(header):
        for n in names:
            if h.strip().lower().startswith(n.lower()):
                return i
    return None


def kernels(path, min_us):
    """(stream, start_ns, duration_ns) of the NCCL kernels lasting at least min_us, in start order."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # nsys may print notes before the header: the header is the first row with a "Start" column
    h = next((i for i, r in enumerate(rows) if r and column(r, "Start") is not None), None)
    if h is None:
        raise ValueError(f"{path}: no header with a Start column")
    header = rows[h]
    start, dur, name = column(header, "Start"), column(header, "Duration"), column(header, "Name")
    strm = column(header, "Strm", "Stream")
    if None in (start, dur, name):
        raise ValueError(f"{path}: expected Start, Duration and Name columns, got {header}")
    out = []
    for r in rows[h + 1:]:
        if len(r) <= max(start, dur, name):
            continue
        if "nccl" not in r[name].lower():
            continue
        try:
            s, d = float(r[start]), float(r[dur])
        except ValueError:
            continue
        if d >= min_us * 1000:
            out.append((r[strm] if strm is not None else "", s, d))
    out.sort(key=lambda k: k[1])
    return out


def stats(ks, max_gap_us):
    durations = [d / 1000 for _, _, d in ks]
    gaps = []
    last = {}
    for stream, s, d in ks:
        if stream in last:
            g = (s - last[stream]) / 1000
            if 0 <= g <= max_gap_us:
                gaps.append(g)
        last[stream] = s + d
    return durations, gaps


def q(v):
    if not v:
        return "—"
    if len(v) == 1:
        return f"{v[0]:.2f}"
    qs = statistics.quantiles(v, n=10)
    return f"{statistics.median(v):.2f} (p10 {qs[0]:.2f}, p90 {qs[-1]:.2f})"


def add_summary(summary, side, durations, gaps):
    """Adds one trace's kernel durations and gaps to its side's totals in summary (side -> (durations, gaps))."""
    summary.setdefault(side, ([], []))
    summary[side][0].extend(durations)
    summary[side][1].extend(gaps)


def differences(summary, start_to_start=None):
    """Prints Java - C of the median kernel duration and gap over all ranks (summary: side -> (durations, gaps)),
    and of the mean start-to-start time when given (side -> mean, us)."""
    if not ("c" in summary and "java" in summary and summary["c"][0] and summary["java"][0]):
        return
    dc, gc = summary["c"]
    dj, gj = summary["java"]
    line = (f"Java - C, medians over all ranks: kernel {statistics.median(dj) - statistics.median(dc):+.2f} us, "
            f"gap {(statistics.median(gj) - statistics.median(gc)) if gc and gj else float('nan'):+.2f} us")
    if start_to_start:
        line += f"; start to start, mean: {start_to_start['java'] - start_to_start['c']:+.2f} us"
    print()
    print(line)


def kernel_traces(d):
    """The trace-<pid>.csv files of kernel_trace.c in d (not its trace-<pid>-api.csv files)."""
    return [f for f in glob.glob(os.path.join(d, "trace-*.csv")) if not f.endswith("-api.csv")]


def cupti_trace(path):
    """The NCCL kernels of a trace-<pid>.csv of kernel_trace.c, {(device, stream): [(start_ns, end_ns,
    correlation_id)] in start order} (correlation_id None in the older format without it), and its notes (the '#'
    lines, without the '#')."""
    streams, notes = {}, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                notes.append(line[1:].strip())
                continue
            # start,end,device,stream,correlation_id,name or (older) start,end,device,stream,name: a name may contain
            # commas, but what comes before its first comma is never all digits (a kernel name starts with a letter,
            # '_' or its return type)
            r = line.split(",", 4)
            if len(r) < 5:
                continue
            corr, _, name = r[4].partition(",")
            if not (name and corr.isascii() and corr.isdigit()):
                corr, name = None, r[4]
            if "nccl" not in name.lower():
                continue
            try:
                s, e, dev, strm = int(r[0]), int(r[1]), int(r[2]), int(r[3])
            except ValueError:
                continue
            streams.setdefault((dev, strm), []).append((s, e, None if corr is None else int(corr)))
    for ks in streams.values():
        ks.sort(key=lambda k: k[:2])
    return streams, notes


def cupti_api(path):
    """The API calls of a trace-<pid>-api.csv of kernel_trace.c: {correlation_id: (thread_id, start_ns)} of the call
    that starts first among those with each id (a kernel's launch has the kernel's id), and {thread_id: (starts,
    calls)}, calls [(start_ns, end_ns, kind, name)] in start order and starts their start_ns."""
    launches, calls = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            r = line.rstrip("\n").split(",", 6)
            if len(r) < 7:
                continue
            try:
                s, e, thread, corr = int(r[0]), int(r[1]), int(r[4]), int(r[5])
            except ValueError:
                continue
            calls.setdefault(thread, []).append((s, e, r[2], r[6]))
            if corr not in launches or s < launches[corr][1]:
                launches[corr] = (thread, s)
    threads = {}
    for thread, cs in calls.items():
        cs.sort()
        threads[thread] = ([c[0] for c in cs], cs)
    return launches, threads


def loop_api_calls(loop, launches, threads):
    """The API calls per operation of a timed loop (kernels (start_ns, end_ns, correlation_id)) from cupti_api's
    launches and threads: on the thread that launched its first kernel, the calls that start from that launch on and
    before the launch of its last kernel, over its kernels - 1: {(kind, name): (calls, us)}; or why there are none."""
    if loop[0][2] is None:
        return "no correlation ids in the trace (a kernel_trace.c older than KERNEL_TRACE_API)"
    first, last = launches.get(loop[0][2]), launches.get(loop[-1][2])
    if not first or not last:
        return (f"no API record of the launch of its first or last kernel (correlation ids {loop[0][2]}, "
                f"{loop[-1][2]})")
    if first[0] != last[0]:
        return f"its first and last kernels were launched on different threads ({first[0]}, {last[0]})"
    starts, calls = threads[first[0]]
    counts = {}
    for s, e, kind, name in calls[bisect.bisect_left(starts, first[1]):bisect.bisect_left(starts, last[1])]:
        n, ns = counts.get((kind, name), (0, 0))
        counts[(kind, name)] = (n + 1, ns + e - s)
    ops = len(loop) - 1
    return {k: (n / ops, ns / 1000 / ops) for k, (n, ns) in counts.items()}


def api_report(per_loop):
    """Prints the API calls per operation of each side (per_loop: side -> [loop_api_calls of each timed loop]), the
    mean over the side's loops, then the calls whose number per operation differs between C and Java."""
    print()
    print("API calls per operation (--api): on the thread that launched a timed loop's first kernel, the calls that "
          "start from that launch on and before the launch of its last kernel, over the loop's kernels - 1; the mean "
          "over the timed loops of a side's traces.")
    means = {}
    for side in ("c", "java"):
        loops = per_loop.get(side, [])
        print()
        print(f"{side}: API calls of {len(loops)} timed loop{'' if len(loops) == 1 else 's'}")
        if not loops:
            continue
        m = {k: tuple(sum(d.get(k, (0, 0))[i] for d in loops) / len(loops) for i in (0, 1))
             for k in set().union(*loops)}
        means[side] = m
        print()
        print("| kind | name | calls per operation | time per operation (us) |")
        print("|---|---|---:|---:|")
        for (kind, name), (n, us) in sorted(m.items(), key=lambda i: (-round(i[1][0], 2), i[0])):
            print(f"| {kind} | {name} | {n:.2f} | {us:.2f} |")
        print(f"| | all | {sum(n for n, _ in m.values()):.2f} | {sum(us for _, us in m.values()):.2f} |")
    if len(means) < 2:
        return
    c, j = means["c"], means["java"]
    delta = {k: j.get(k, (0, 0))[0] - c.get(k, (0, 0))[0] for k in set(c) | set(j)}
    differ = sorted((k for k, d in delta.items() if round(abs(d), 9) >= 0.05),
                    key=lambda k: (-round(abs(delta[k]), 2), k))
    print()
    print("C vs Java: the calls whose number per operation differs by 0.05 or more")
    print()
    print("| kind | name | c | java | java - c |")
    print("|---|---|---:|---:|---:|")
    for k in differ:
        print(f"| {k[0]} | {k[1]} | {c.get(k, (0, 0))[0]:.2f} | {j.get(k, (0, 0))[0]:.2f} | {delta[k]:+.2f} |")
    tc, tj = (sum(us for _, us in x.values()) for x in (c, j))
    print()
    print(f"API time per operation (sum of end - start): c {tc:.2f} us, java {tj:.2f} us, Java - C {tj - tc:+.2f} us")


def timed_loops(ks, max_gap_us, min_run):
    """The runs of at least min_run kernels of ks (one stream's (start_ns, end_ns, ...), in start order) in which each
    kernel starts less than max_gap_us after the previous one ends."""
    if not ks:
        return []
    loops, run = [], ks[:1]
    for k in ks[1:]:
        if 0 <= (k[0] - run[-1][1]) / 1000 < max_gap_us:
            run.append(k)
        else:
            loops.append(run)
            run = [k]
    loops.append(run)
    return [r for r in loops if len(r) >= min_run]


def cupti(c_dir, j_dir, max_gap_us, min_run, api=False):
    """Prints, per trace of kernel_trace.c in c_dir (C) and j_dir (Java), the NCCL kernels of the timed loops; with
    api, then the API calls per operation of each side (api_report)."""
    traces = []
    found = {d: kernel_traces(d) for d in (c_dir, j_dir)}
    missing = [d for d in (c_dir, j_dir) if not found[d]]
    for d in missing:
        print(f"timeline_report: no trace-*.csv in {d}", file=sys.stderr)
    for side, d in (("c", c_dir), ("java", j_dir)):
        files = []
        for f in found[d]:
            streams, notes = cupti_trace(f)
            first = min((ks[0][0] for ks in streams.values()), default=None)
            files.append((first is None, first or 0, os.path.basename(f), f, streams, notes))
        traces.extend((side,) + t[2:] for t in sorted(files, key=lambda t: t[:3]))  # in the order they ran, then name
    print(f"Timed loops: runs of at least {min_run} NCCL kernels, each starting less than {max_gap_us:g} us after "
          f"the previous one ends.")
    print()
    print("| side | trace | device | timed loops | kernels | kernel duration, median (us) | gap between kernels, median (us) "
          "| start to start, mean (us) |")
    print("|---|---|---|---:|---:|---|---|---:|")
    summary, spans, notes_out, api_loops = {}, {}, [], {}
    for side, name, path, streams, notes in traces:
        durations, gaps, devices, nloops, span, steps = [], [], set(), 0, 0, 0
        api_path = path[:-len(".csv")] + "-api.csv"
        calls = cupti_api(api_path) if api and os.path.exists(api_path) else None
        if api:
            api_loops.setdefault(side, [])
            if calls is None:
                notes_out.append(f"{side} {name}: no {os.path.basename(api_path)} (KERNEL_TRACE_API=1 writes it): "
                                 f"no API calls")
        for (dev, strm), ks in sorted(streams.items()):
            for loop in timed_loops(ks, max_gap_us, min_run):
                nloops += 1
                devices.add(dev)
                if calls is not None:
                    per_op = loop_api_calls(loop, *calls)
                    if isinstance(per_op, str):
                        notes_out.append(f"{side} {name}: the timed loop of device {dev}, stream {strm} starting at "
                                         f"{loop[0][0]} ns: {per_op}: left out of the API calls")
                    else:
                        api_loops[side].append(per_op)
                durations.extend((e - s) / 1000 for s, e, _ in loop)
                gaps.extend((loop[i + 1][0] - loop[i][1]) / 1000 for i in range(len(loop) - 1))
                span += (loop[-1][0] - loop[0][0]) / 1000
                steps += len(loop) - 1
        add_summary(summary, side, durations, gaps)
        spans.setdefault(side, [0, 0])
        spans[side][0] += span
        spans[side][1] += steps
        period = f"{span / steps:.2f}" if steps else "—"
        device = ", ".join(str(d) for d in sorted(devices)) or "—"
        print(f"| {side} | {name} | {device} | {nloops} | {len(durations)} | {q(durations)} | {q(gaps)} | {period} |")
        if not nloops:
            n = sum(len(ks) for ks in streams.values())
            notes_out.append(f"{side} {name}: no timed loop ({n} NCCL kernels)")
        for n in notes:
            m = re.fullmatch(r"dropped (\d+)", n)
            notes_out.append(f"{side} {name}: " + (f"CUPTI dropped {m.group(1)} records: kernels are missing" if m else n))
    if notes_out:
        print()
        for n in notes_out:
            print(f"- {n}")
    means = {side: sp / st for side, (sp, st) in spans.items() if st}
    differences(summary, means if len(means) == 2 else None)
    if api:
        api_report(api_loops)
    return 2 if missing else 0


def op_times(c_path, j_path):
    """Prints the per-operation times of two -J files made with --op_times 1, C and Java side by side."""
    import json

    def load(path):
        with open(path) as f:
            d = json.load(f)
        return {(r["op"], r["size"], r["placement"]): r["op_time_us"] for r in d.get("results", [])
                if r.get("op_time_us")}
    c, j = load(c_path), load(j_path)
    keys = [k for k in c if k in j]
    if not keys:
        print(f"timeline_report: no op_time_us records in both {c_path} and {j_path} (run with --op_times 1)",
              file=sys.stderr)
        return 2
    print("| operation | size | placement | C p10 / p50 / p90 / max (us) | Java p10 / p50 / p90 / max (us) | Java - C, p50 (us) |")
    print("|---|---:|---|---|---|---:|")
    for k in keys:
        f = lambda q: " / ".join(f"{q[x]:.2f}" for x in ("p10", "p50", "p90", "max"))
        print(f"| {k[0]} | {k[1]} | {k[2]} | {f(c[k])} | {f(j[k])} | {j[k]['p50'] - c[k]['p50']:+.2f} |")
    return 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--op-times":
        if len(sys.argv) != 4:
            print("usage: timeline_report.py --op-times C.json JAVA.json", file=sys.stderr)
            return 2
        return op_times(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 2 and sys.argv[1] == "--cupti":
        p = argparse.ArgumentParser(prog="timeline_report.py --cupti")
        p.add_argument("c_dir")
        p.add_argument("java_dir")
        p.add_argument("--max-gap-us", type=float, default=20)
        p.add_argument("--min-run", type=int, default=100)
        p.add_argument("--api", action="store_true", help="also the API calls per operation (trace-<pid>-api.csv)")
        a = p.parse_args(sys.argv[2:])
        return cupti(a.c_dir, a.java_dir, a.max_gap_us, a.min_run, a.api)
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--min-us", type=float, default=50)
    p.add_argument("--max-gap-us", type=float, default=100)
    a = p.parse_args()
    files = sorted(glob.glob(os.path.join(a.dir, "*-rank*_cuda_gpu_trace.csv")))
    if not files:
        print(f"timeline_report: no *-rank*_cuda_gpu_trace.csv in {a.dir}", file=sys.stderr)
        return 2
    print("| side | rank | kernels | kernel duration, median (us) | gap between kernels, median (us) |")
    print("|---|---:|---:|---|---|")
    summary = {}
    for f in files:
        m = re.match(r"(.+)-rank(\d+)_cuda_gpu_trace\.csv$", os.path.basename(f))
        if not m:
            continue
        side, rank = m.group(1), int(m.group(2))
        durations, gaps = stats(kernels(f, a.min_us), a.max_gap_us)
        add_summary(summary, side, durations, gaps)
        print(f"| {side} | {rank} | {len(durations)} | {q(durations)} | {q(gaps)} |")
    differences(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
