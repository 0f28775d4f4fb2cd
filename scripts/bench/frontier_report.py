#!/usr/bin/env python3
"""frontier_report.py TSV [--json FILE]: the report of scripts/bench/frontier.sh.

Per library, rank count, -R value and case: one line per size with the medians over the rounds of the out-of-place
time (us) and bus bandwidth (GB/s) of nccl-tests (c) and nccl4j-perf (java), Java - C, Java / C, and each round's
Java - C. A size that one side lacks in a round is left out of that round.

--json FILE also writes the summary fields of issue 28's acceptance, from the same medians (null where the run has
no such rows): symmetric_small_us and nccl_tests_symmetric_small_us, the median over the sizes from 8 B to 64 KiB of
the all-reduce time at -R 2 with 2 ranks on the first library of the TSV (nccl4j-perf and nccl-tests);
min_busbw_ratio_64MiB_up_4gpu, the least Java / C bus bandwidth ratio over every case, -R value and library at
64 MiB and above with 4 ranks; and per library the same three keyed by its name (by_library).
"""
import csv
import statistics
import sys
from collections import defaultdict


SMALL_MAX = 64 << 10
LARGE_MIN = 64 << 20


def medians(got):
    """The medians over the rounds of one size: (c time, java time, c busbw, java busbw), or None."""
    rounds = sorted({r for (_, r) in got})
    c = [got[("c", r)] for r in rounds if ("c", r) in got]
    j = [got[("java", r)] for r in rounds if ("java", r) in got]
    if not c or not j:
        return None
    return (statistics.median(x[0] for x in c), statistics.median(x[0] for x in j),
            statistics.median(x[1] for x in c), statistics.median(x[1] for x in j))


def summary(runs):
    """The summary fields (see the module's description)."""
    libs = []
    for (lib, _, _, _, _) in runs:
        if lib not in libs:
            libs.append(lib)

    def of(lib):
        small_c, small_j, ratios = [], [], []
        for (l, np_, reg, case, size), got in runs.items():
            m = medians(got)
            if l != lib or m is None:
                continue
            if np_ == 2 and reg == 2 and case.split()[0].startswith("all_reduce") and size <= SMALL_MAX:
                small_c.append(m[0])
                small_j.append(m[1])
            if np_ == 4 and size >= LARGE_MIN and m[2] > 0:
                ratios.append(m[3] / m[2])
        r = lambda v: round(v, 4) if v is not None else None
        return {"symmetric_small_us": r(statistics.median(small_j)) if small_j else None,
                "nccl_tests_symmetric_small_us": r(statistics.median(small_c)) if small_c else None,
                "min_busbw_ratio_64MiB_up_4gpu": r(min(ratios)) if ratios else None}

    by = {lib: of(lib) for lib in libs}
    first = by[libs[0]] if libs else of(None)
    out = dict(first)
    out["library"] = libs[0] if libs else None
    ratios = [v["min_busbw_ratio_64MiB_up_4gpu"] for v in by.values() if v["min_busbw_ratio_64MiB_up_4gpu"] is not None]
    out["min_busbw_ratio_64MiB_up_4gpu"] = min(ratios) if ratios else None
    out["by_library"] = by
    return out


def main(path, json_path=None):
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
    if json_path:
        import json
        with open(json_path, "w") as f:
            json.dump(summary(runs), f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--json"):
        print("usage: frontier_report.py TSV [--json FILE]", file=sys.stderr)
        sys.exit(2)
    main(args[0], args[2] if len(args) == 3 else None)
