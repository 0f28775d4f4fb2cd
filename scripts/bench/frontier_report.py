#!/usr/bin/env python3
"""frontier_report.py TSV: the report of scripts/bench/frontier.sh.

Per library, rank count, -R value and case: one line per size with the medians over the rounds of the out-of-place
time (us) and bus bandwidth (GB/s) of nccl-tests (c) and nccl4j-perf (java), Java - C, Java / C, and each round's
Java - C. A size that one side lacks in a round is left out of that round.
"""
import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(dict)   # (lib, np, reg, case, size) -> {(side, round): (time, busbw)}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["lib"], int(row["np"]), int(row["reg"]), row["case"], int(row["size"]))
            try:
                runs[key][(row["side"], int(row["round"]))] = (float(row["time_us"]), float(row["busbw"]))
            except ValueError:
                continue
    print("# nccl4j-perf against nccl-tests (out-of-place; medians over the rounds)\n")
    last = None
    for key in sorted(runs, key=lambda k: (k[0], k[1], k[3], k[2], k[4])):
        lib, np_, reg, case, size = key
        if (lib, np_, reg, case) != last:
            last = (lib, np_, reg, case)
            print(f"\n## {lib}, {np_} GPUs, -R {reg}: `{case}`\n")
            print("| size | C us | Java us | Java - C us | Java / C | C busbw | Java busbw | busbw J / C | rounds J - C |")
            print("|---|---|---|---|---|---|---|---|---|")
        got = runs[key]
        rounds = sorted({r for (_, r) in got})
        c = [got[("c", r)] for r in rounds if ("c", r) in got]
        j = [got[("java", r)] for r in rounds if ("java", r) in got]
        if not c or not j:
            print(f"| {size} | {'-' if not c else ''} | {'-' if not j else ''} | | | | | | missing |")
            continue
        ct = statistics.median(x[0] for x in c)
        jt = statistics.median(x[0] for x in j)
        cb = statistics.median(x[1] for x in c)
        jb = statistics.median(x[1] for x in j)
        per = " ".join(f"{got[('java', r)][0] - got[('c', r)][0]:+.2f}" for r in rounds
                       if ("c", r) in got and ("java", r) in got)
        ratio = f"{jb / cb:.4f}" if cb > 0 else "-"
        print(f"| {size} | {ct:.2f} | {jt:.2f} | {jt - ct:+.2f} | {jt / ct:.3f} | {cb:.2f} | {jb:.2f} | {ratio} | {per} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: frontier_report.py TSV", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
