#!/usr/bin/env python3
"""Kernel durations and the gaps between kernels, C against Java, from Nsight Systems traces.

Reads the CSV files that `nsys stats -r cuda_gpu_trace -f csv` wrote for each rank of each side (made by
scripts/perf-timeline.sh: <dir>/<side>-rank<r>_cuda_gpu_trace.csv, side = c or java) and prints, per side and
rank, the median duration of the NCCL kernels of the measured size and the median idle gap between one such
kernel and the next on the same stream. A per-operation difference between C and Java then shows as longer
kernels (the GPU does more or slower work) or as longer gaps (the next kernel reaches the GPU later).

Only kernels whose name contains "nccl" and that last at least --min-us are kept, which leaves out the 8-byte
all-reduces nccl4j-perf uses as a barrier between measurements. Gaps longer than --max-gap-us are the ends of
timed loops (a barrier, a host synchronization) and are left out of the gap statistics.

  perf/timeline_report.py DIR [--min-us 50] [--max-gap-us 100]
  perf/timeline_report.py --op-times C.json JAVA.json     (the fallback without nsys: the "op_time_us" records
                                                           that --op_times 1 adds to -J files, side by side)
"""
import argparse
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
        summary.setdefault(side, ([], []))
        summary[side][0].extend(durations)
        summary[side][1].extend(gaps)
        print(f"| {side} | {rank} | {len(durations)} | {q(durations)} | {q(gaps)} |")
    if "c" in summary and "java" in summary and summary["c"][0] and summary["java"][0]:
        dc, gc = summary["c"]
        dj, gj = summary["java"]
        print()
        print(f"Java - C, medians over all ranks: kernel {statistics.median(dj) - statistics.median(dc):+.2f} us, "
              f"gap {(statistics.median(gj) - statistics.median(gc)) if gc and gj else float('nan'):+.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
