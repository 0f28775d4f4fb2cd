#!/usr/bin/env python3
"""The report of scripts/bench/perf-ab.sh: the C baseline against nccl4j-perf in alternating rounds, per variant.

  scripts/bench/ab_report.py --json-dir DIR --variants V1[,V2...] --rounds R [--order cj|jc|alternate]   (markdown on stdout)

Files read (in --json-dir), each in nccl4j-perf's -J shape: c-<variant>-<round>.json (the C baseline) and
java-<variant>-<round>.json (nccl4j-perf), for every variant of --variants and every round 1..R. A case is one
(op, size, placement, type, redop, root) of the results, in the order the results first list them. For each
variant, a table with a row per case: each round's C and Java time_us, their medians over the rounds, Java - C and
Java / C of the two medians, and each round's Java - C. With several variants, then a table of each variant's
Java - C (of the medians) per case. --order (default cj) is perf-ab.sh's, for the sentence that says which side
ran first. A file that is missing or unreadable is named at the top, and the figures are those of the rounds
present: a median over the rounds that have the value, a round's Java - C only where both sides have it; n/a where
there is nothing. Exit status 0 when the report is written (files missing or not), 2 on bad arguments.
"""
import argparse
import json
import os
import re

from perf_common import case_key, human, median_or_none, minus

ORDERS = {
    "cj": "Each round ran C, then Java",
    "jc": "Each round ran Java, then C",
    "alternate": "Odd rounds ran C, then Java, and even rounds Java, then C",
}
CASE_HEAD = "| operation | size | placement | type | redop | root |"
CASE_ALIGN = "|---|---:|---|---|---|---:|"


def load(path):
    """(document, None) or (None, why)"""
    try:
        with open(path) as f:
            d = json.load(f)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError) as e:
        return None, f"unreadable: {e.__class__.__name__}"
    if not isinstance(d, dict) or not isinstance(d.get("results"), list):
        return None, "unreadable: no results"
    return d, None


def fmt(v):
    return "n/a" if v is None else f"{v:.2f}"


def signed(v):
    return "n/a" if v is None else f"{v:+.2f}"


def case_cells(k):
    op, size, placement, typ, redop, root = k
    return f"| {op} | {human(size)} | {placement} | {typ} | {redop} | {root} |"


def command_line(d):
    """The document's command line without -J FILE."""
    out, skip = [], False
    for a in d.get("command_line") or []:
        if skip:
            skip = False
        elif a in ("-J", "--output_file"):
            skip = True
        elif not (a.startswith("-J") or a.startswith("--output_file=")):
            out.append(a)
    return " ".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json-dir", required=True)
    p.add_argument("--variants", required=True, help="the variant names, ','-separated, in perf-ab.sh's order")
    p.add_argument("--rounds", required=True, type=int)
    p.add_argument("--order", default="cj", choices=sorted(ORDERS), help="which side ran first in a round")
    a = p.parse_args()
    variants = a.variants.split(",")
    if a.rounds < 1:
        p.error(f"--rounds {a.rounds} must be >= 1")
    for v in variants:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", v):
            p.error(f"--variants: '{v}' is not a variant name")
    if len(set(variants)) != len(variants):
        p.error(f"--variants: a name is given twice: {a.variants}")
    rounds = range(1, a.rounds + 1)

    # times[v][side][case] = {round: time_us}
    times, cases, absent, first = {}, {}, [], {}
    for v in variants:
        times[v] = {"c": {}, "java": {}}
        for r in rounds:
            for side in ("c", "java"):
                name = f"{side}-{v}-{r}.json"
                d, why = load(os.path.join(a.json_dir, name))
                if d is None:
                    absent.append(f"{name} ({why})" if why != "missing" else name)
                    continue
                first.setdefault(side, d)
                for res in d["results"]:
                    k = case_key(res)
                    cases.setdefault(k, None)
                    times[v][side].setdefault(k, {})[r] = float(res["time_us"])

    n_runs = 2 * len(variants) * a.rounds
    L = [f"# C baseline against nccl4j-perf: {a.rounds} round{'s' if a.rounds > 1 else ''}, alternating", ""]
    meta = first.get("c") or first.get("java")
    if meta:
        L.append(f"NCCL {meta.get('nccl_version', '?')}, {meta.get('ranks', '?')} ranks, host {meta.get('hostname', '?')}. "
                 "Command lines without -J: C `" + (command_line(first["c"]) if "c" in first else "n/a")
                 + "`, nccl4j-perf `" + (command_line(first["java"]) if "java" in first else "n/a") + "`.")
        L.append("")
    L.append(f"Times in us (time_us, the time column: per operation). {ORDERS[a.order]}, for each variant in "
             "turn. The medians are over the rounds; Java - C and Java / C are of the two medians.")
    L.append("")
    if absent:
        L.append(f"Missing: {len(absent)} of {n_runs} results: {', '.join(absent)}. The figures are over the rounds "
                 "present (a round's Java - C where it has both).")
    else:
        L.append(f"All {n_runs} results present.")
    L.append("")

    diffs = {}   # (variant, case) -> Java median - C median
    for v in variants:
        L.append(f"## Variant {v}")
        L.append("")
        c_by, j_by = times[v]["c"], times[v]["java"]
        ks = [k for k in cases if k in c_by or k in j_by]
        if not ks:
            L.append("No results.")
            L.append("")
            continue
        L.append(CASE_HEAD + "".join(f" round {r}: C / Java |" for r in rounds)
                 + " C median | Java median | Java - C | Java / C | Java - C per round |")
        L.append(CASE_ALIGN + "---:|" * a.rounds + "---:|---:|---:|---:|---|")
        for k in ks:
            c, j = c_by.get(k, {}), j_by.get(k, {})
            per_round = " |".join(f" {fmt(c.get(r))} / {fmt(j.get(r))}" for r in rounds)
            cm, jm = median_or_none(list(c.values())), median_or_none(list(j.values()))
            d = minus(jm, cm)
            diffs[(v, k)] = d
            ratio = f"{jm / cm:.4f}" if d is not None and cm != 0 else "n/a"
            each = ", ".join(signed(minus(j.get(r), c.get(r))) for r in rounds)
            L.append(f"{case_cells(k)}{per_round} | {fmt(cm)} | {fmt(jm)} | {signed(d)} | {ratio} | {each} |")
        L.append("")

    if len(variants) > 1 and cases:
        L.append("## Java - C per variant (us, of the medians)")
        L.append("")
        L.append(CASE_HEAD + "".join(f" {v} |" for v in variants))
        L.append(CASE_ALIGN + "---:|" * len(variants))
        for k in cases:
            L.append(case_cells(k) + "".join(f" {signed(diffs.get((v, k)))} |" for v in variants))
        L.append("")
    print("\n".join(L), end="")


if __name__ == "__main__":
    main()
