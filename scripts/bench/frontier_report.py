#!/usr/bin/env python3
"""frontier_report.py TSV [--json FILE]: the report of scripts/bench/frontier.sh.

Per library, rank count, -R value and case: one line per size with the medians over the rounds of the time (us) and
bus bandwidth (GB/s) of nccl-tests (c) and nccl4j-perf (java), Java - C, Java / C, and each round's Java - C; out of
place first, then, in a second table, in place (where the TSV has frontier.sh's in_place_time_us and in_place_busbw
columns; a TSV of the nine columns from before them gives the out-of-place tables only). A size that one side lacks
in a round is left out of that round.

--json FILE also writes the summary fields of issue 28's acceptance, from the same medians (null where the run has
no such rows): symmetric_small_us and nccl_tests_symmetric_small_us, the median over the sizes from 8 B to 64 KiB of
the out-of-place all-reduce time at -R 2 with 2 ranks on the first library of the TSV (nccl4j-perf and nccl-tests);
min_busbw_ratio_64MiB_up_4gpu, the least Java / C bus bandwidth ratio over every case, -R value and library at
64 MiB and above with 4 ranks, out of place and in place alike (the lesser of the two placements' least ratios), and
min_busbw_ratio_64MiB_up_4gpu_at, the cell it comes from ("LIB -R N OPERATION SIZE out of place" or "... in place");
and per library the same keyed by its name (by_library).
"""
import csv
import statistics
import sys
from collections import defaultdict


SMALL_MAX = 64 << 10
LARGE_MIN = 64 << 20
OUT, IN = 0, 1                           # the placements: index of (time, busbw) pairs in a row's figures
PLACEMENT = {OUT: "out of place", IN: "in place"}
HEADER = ("| size | C us | Java us | Java - C us | Java / C | C busbw | Java busbw | busbw J / C "
          "| rounds J - C |\n|---|---|---|---|---|---|---|---|---|")


def pairs(got, placement):
    """One size's rounds as [(round, c (time, busbw), java (time, busbw))] for the placement, where both sides have
    figures of it in that round."""
    out = []
    for r in sorted({r for (_, r) in got}):
        c, j = got.get(("c", r)), got.get(("java", r))
        if c is not None and j is not None and c[placement] is not None and j[placement] is not None:
            out.append((r, c[placement], j[placement]))
    return out


def side(got, name, placement):
    """One side's figures of the placement over its rounds."""
    return [v[placement] for (s, _), v in sorted(got.items()) if s == name and v[placement] is not None]


def medians(got, placement=OUT):
    """The medians over the rounds of one size: (c time, java time, c busbw, java busbw), or None."""
    c, j = side(got, "c", placement), side(got, "java", placement)
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
            if l != lib:
                continue
            m = medians(got, OUT)
            if m is not None and np_ == 2 and reg == 2 and case.split()[0].startswith("all_reduce") \
                    and size <= SMALL_MAX:
                small_c.append(m[0])
                small_j.append(m[1])
            for placement in (OUT, IN):
                m = medians(got, placement)
                if m is not None and np_ == 4 and size >= LARGE_MIN and m[2] > 0:
                    where = f"{lib} -R {reg} {case.split()[0].replace('_perf', '')} {size} {PLACEMENT[placement]}"
                    ratios.append((m[3] / m[2], where))
        r = lambda v: round(v, 4) if v is not None else None
        least = min(ratios, key=lambda x: x[0]) if ratios else (None, None)
        return {"symmetric_small_us": r(statistics.median(small_j)) if small_j else None,
                "nccl_tests_symmetric_small_us": r(statistics.median(small_c)) if small_c else None,
                "min_busbw_ratio_64MiB_up_4gpu": r(least[0]),
                "min_busbw_ratio_64MiB_up_4gpu_at": least[1]}

    by = {lib: of(lib) for lib in libs}
    first = by[libs[0]] if libs else of(None)
    out = dict(first)
    out["library"] = libs[0] if libs else None
    least = [v for v in by.values() if v["min_busbw_ratio_64MiB_up_4gpu"] is not None]
    least = min(least, key=lambda v: v["min_busbw_ratio_64MiB_up_4gpu"]) if least else None
    out["min_busbw_ratio_64MiB_up_4gpu"] = least["min_busbw_ratio_64MiB_up_4gpu"] if least else None
    out["min_busbw_ratio_64MiB_up_4gpu_at"] = least["min_busbw_ratio_64MiB_up_4gpu_at"] if least else None
    out["by_library"] = by
    return out


def number(text):
    """A figure of the TSV, or None where it is missing or not a number (a run cut short, an older TSV)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def table(size, got, placement):
    """The table line of one size and placement."""
    c, j = side(got, "c", placement), side(got, "java", placement)
    if not c or not j:
        return f"| {size} | {'-' if not c else ''} | {'-' if not j else ''} | | | | | | missing |"
    ct, jt, cb, jb = medians(got, placement)
    per = " ".join(f"{jv[0] - cv[0]:+.2f}" for (_, cv, jv) in pairs(got, placement))
    ratio = f"{jb / cb:.4f}" if cb > 0 else "-"
    return f"| {size} | {ct:.2f} | {jt:.2f} | {jt - ct:+.2f} | {jt / ct:.3f} | {cb:.2f} | {jb:.2f} | {ratio} | {per} |"


def main(path, json_path=None):
    runs = defaultdict(dict)   # (lib, np, reg, case, size) -> {(side, round): ((time, busbw), (time, busbw) | None)}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["lib"], int(row["np"]), int(row["reg"]), row["case"], int(row["size"]))
            out = (number(row["time_us"]), number(row["busbw"]))
            inp = (number(row.get("in_place_time_us")), number(row.get("in_place_busbw")))
            if None in out:
                continue
            runs[key][(row["side"], int(row["round"]))] = (out, None if None in inp else inp)
    print("# nccl4j-perf against nccl-tests (out of place, then in place; medians over the rounds)\n")
    cases = defaultdict(list)   # (lib, np, reg, case) -> its sizes, in order
    for key in sorted(runs, key=lambda k: (k[0], k[1], k[3], k[2], k[4])):
        cases[key[:4]].append(key[4])
    for (lib, np_, reg, case), sizes in cases.items():
        print(f"\n## {lib}, {np_} GPUs, -R {reg}: `{case}`\n")
        print(HEADER)
        for size in sizes:
            print(table(size, runs[(lib, np_, reg, case, size)], OUT))
        if any(v[IN] is not None for size in sizes for v in runs[(lib, np_, reg, case, size)].values()):
            print("\nIn place:\n")
            print(HEADER)
            for size in sizes:
                print(table(size, runs[(lib, np_, reg, case, size)], IN))
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
