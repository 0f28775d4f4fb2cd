#!/usr/bin/env python3
"""Writes the perf report from the JSON of scripts/bench/perf-compare.sh: <docs>/<date>-benchmark.md and
<docs>/benchmark-latest.json.

Files read (in --json-dir), each in nccl4j-perf's -J shape:
  c-eager-small-<r>, java-np-eager-small-<r>, java-g-eager-small-<r>         all_reduce 8 B..64 KiB, eager
  c-graph-small-<r>, java-np-graph-small-<r>, java-g-graph-small-<r>         the same as CUDA graphs
  c-eager-curve, java-np-eager-curve, java-g-eager-curve                     all_reduce 8 B..1 GiB
  c-eager-large, java-np-eager-large, java-g-eager-large                     every operation, 64 MiB..1 GiB
  torch-eager                                                                torch.distributed all_reduce
  c-check, java-np-check, java-g-check                                       every operation, checked
  c-init-<r>, java-np-init-<r>, java-g-init-<r>                              short runs with --init_repeats
Small-size figures are medians over the repeats. benchmark-latest.json holds exactly: date, machine, nccl_version,
ranks, native_small_us, java_small_us, torch_small_us (8 B, out of place; torch is in place), small_overhead_us
(max over 8 B..64 KiB of Java - C, one process per GPU, eager), graph_overhead_us (the same for CUDA graphs),
min_busbw_ratio_64MiB_up (min over operations, placements and sizes >= 64 MiB of Java/C bus bandwidth),
init_overhead_ms (median Java communicator init - median C init, one process per GPU: the first communicator of
each process, ranks aligned by a barrier before the clock), init_repeat_overhead_ms (the same for the communicators
re-created in the same process by --init_repeats; an addition to the issue's keys), alloc_bytes_per_call
(the most Java heap bytes allocated per all_reduce call in the one-process-per-GPU eager runs),
small_overhead_fast_us (small_overhead_us over the fast points only, see fast_times; another addition), then the
figures the README and performance.md print: native_graph_small_us, java_graph_small_us (8 B, CUDA graph),
native_busbw_64MiB_gbps, java_busbw_64MiB_gbps, busbw_ratio_64MiB, busbw_ratio_64MiB_in_place,
min_busbw_ratio_64MiB_up_but_alltoall (min_busbw_ratio_64MiB_up over the operations other than alltoall),
native_busbw_1GiB_gbps, java_busbw_1GiB_gbps, busbw_ratio_1GiB (all_reduce, out of place unless named; median bus
bandwidth over the large repeats), native_init_ms, java_init_ms, torch_init_ms (the medians whose differences
init_overhead_ms is), small_repeats and large_repeats (the C runs of each).
"sources" maps every number of the file to the report that shows it: this run's <date>-benchmark.md for the keys
above. A key of the file from another report stays, with its source, when the file names that report for it (or,
without a source, when it is one of OTHER_REPORTS_KEYS: the frontier's and DDP's medians, written from
scripts/bench/frontier.sh's frontier.json and scripts/bench/ddp-compare.sh's ddp-compare.json, and the words that
describe other reports' runs, such as their dates and machines); a key from the report
this run replaces (the source of the file's native_small_us) goes, as does any key without a source.
"""
import argparse
import glob
import json
import os
import statistics

from perf_common import case_key, human, median_or_none, minus

OTHER_REPORTS_KEYS = ("frontier_date", "frontier_machine", "symmetric_small_us", "nccl_tests_symmetric_small_us",
                      "min_busbw_ratio_64MiB_up_4gpu", "ddp_step_ms_2gpu", "ddp_step_ms_4gpu", "ddp_compute_only_ms",
                      "torch_ddp_step_ms_2gpu", "torch_ddp_step_ms_4gpu", "ddp_args_2gpu", "ddp_args_4gpu", "sharded_date",
                      "sharded_machine")

SMALL_MAX = 65536
LARGE_MIN = 64 << 20
FAST_MARGIN_US = 1.0
LEVEL_GAP = 0.05   # two bandwidth levels: their means at least this fraction of the upper one apart


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def docs(json_dir, prefix):
    out = []
    for p in sorted(glob.glob(os.path.join(json_dir, prefix + "*.json"))):
        d = load(p)
        if d is not None:
            out.append(d)
    return out


def times(ds, placement="out-of-place", op="all_reduce"):
    """size -> list of time_us over the documents (repeats)"""
    by = {}
    for d in ds:
        for r in d.get("results", []):
            if r["op"] == op and r["placement"] == placement and r["size"] > 0:
                by.setdefault(int(r["size"]), []).append(r["time_us"])
    return by


def median_doc(ds):
    """One document whose results carry the median busbw (and time) of each case over the repeats in ds."""
    if not ds:
        return None
    groups = {}
    for d in ds:
        for r in d.get("results", []):
            groups.setdefault(case_key(r), []).append(r)
    results = []
    for rs in groups.values():
        m = dict(rs[0])
        m["busbw"] = statistics.median(r["busbw"] for r in rs)
        m["time_us"] = statistics.median(r["time_us"] for r in rs)
        m["repeats"] = len(rs)
        results.append(m)
    out = dict(ds[0])
    out["results"] = results
    return out


def jmh_alloc(path):
    """(max B/op over the collective benchmarks that make no Group object, rows) from JMH's -prof gc output."""
    rows = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 5 and parts[0].endswith(":gc.alloc.rate.norm"):
                    rows.append((parts[0].split(":")[0].split(".")[-1], float(parts[3])))
    except OSError:
        return None, []
    collective = [b for name, b in rows if name != "groupOfTwo"]
    return (max(collective) if collective else None), rows


def med(by, size):
    return median_or_none(by.get(size))


def fast_times(a_by, b_by):
    """(a_by, b_by) with only the fast points left at each size: the times below the fastest time of either side at
    that size + FAST_MARGIN_US. The machine puts a process in a fast (host-bound) or a slow state, and it can switch in
    the middle of a run, so a run is sorted out per point rather than as a whole."""
    fa, fb = {}, {}
    for s in set(a_by) | set(b_by):
        cut = min(a_by.get(s, []) + b_by.get(s, [])) + FAST_MARGIN_US
        fa[s] = [t for t in a_by.get(s, []) if t < cut]
        fb[s] = [t for t in b_by.get(s, []) if t < cut]
    return fa, fb


def otsu_cut(values, apart):
    """The threshold between two groups of values (Otsu's: the cut between sorted values that leaves the least
    variance within the two groups), when there are 4 values or more and apart(lower mean, upper mean); else None."""
    v = sorted(values)
    if len(v) < 4:
        return None
    best = None
    for i in range(1, len(v)):
        lo, hi = v[:i], v[i:]
        ml, mh = statistics.mean(lo), statistics.mean(hi)
        within = sum((x - ml) ** 2 for x in lo) + sum((x - mh) ** 2 for x in hi)
        if best is None or within < best[0]:
            best = (within, i)
    i = best[1]
    if not apart(statistics.mean(v[:i]), statistics.mean(v[i:])):
        return None
    return (v[i - 1] + v[i]) / 2


def mode_cut(values):
    """The threshold between the fast and the slow mode of per-run medians (us), when the two groups' means are at
    least 1 us apart; else None."""
    return otsu_cut(values, lambda lo, hi: hi - lo >= 1.0)


def level_cut(values):
    """The threshold between two per-run bandwidth levels (GB/s), when the two groups' means are at least LEVEL_GAP
    of the upper one apart; else None."""
    return otsu_cut(values, lambda lo, hi: hi - lo >= LEVEL_GAP * hi)


def level_line(c_runs, j_runs):
    """The sub-item comparing C and Java within each of two bandwidth levels, or None when the runs make one level."""
    cut = level_cut(c_runs + j_runs)
    if cut is None:
        return None

    def runs(n):
        return f"{n} run" + ("" if n == 1 else "s")

    def level(where, keep):
        c = [v for v in c_runs if keep(v)]
        j = [v for v in j_runs if keep(v)]
        mc, mj = median_or_none(c), median_or_none(j)
        ratio = mj / mc if mc and mj is not None else None
        return (f"{where} it C {fmt(mc, 1)} ({runs(len(c))}) and Java {fmt(mj, 1)} ({runs(len(j))}), "
                f"Java / C {fmt(ratio, 3)}")

    return (f"  - two levels, split at {cut:.1f} GB/s: " + level("above", lambda v: v > cut) + "; "
            + level("below", lambda v: v < cut))


def fmt(v, digits=2):
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json-dir", required=True)
    p.add_argument("--docs", required=True)
    p.add_argument("--date", required=True)
    p.add_argument("--machine", default="unknown")
    p.add_argument("--png", default=None)
    p.add_argument("--failures", type=int, default=0)
    p.add_argument("--jmh", default=None, help="output of scripts/bench/jmh-alloc.sh: alloc_bytes_per_call from JMH")
    a = p.parse_args()
    jd = a.json_dir

    c_small, j_small, g_small = docs(jd, "c-eager-small-"), docs(jd, "java-np-eager-small-"), docs(jd, "java-g-eager-small-")
    c_graph, j_graph, g_graph = docs(jd, "c-graph-small-"), docs(jd, "java-np-graph-small-"), docs(jd, "java-g-graph-small-")
    torch = load(os.path.join(jd, "torch-eager.json"))
    c_larges, j_larges, g_larges = docs(jd, "c-eager-large"), docs(jd, "java-np-eager-large"), docs(jd, "java-g-eager-large")
    c_large, j_large, g_large = (median_doc(ds) for ds in (c_larges, j_larges, g_larges))
    checks = {n: load(os.path.join(jd, n + ".json")) for n in ("c-check", "java-np-check", "java-g-check")}

    tc, tj, tg = times(c_small), times(j_small), times(g_small)
    tci, tji, tgi = times(c_small, "in-place"), times(j_small, "in-place"), times(g_small, "in-place")
    fj, fc = fast_times(tj, tc)
    fji, fci = fast_times(tji, tci)
    tt = times([torch] if torch else [], placement="in-place")
    gc, gj, gg = times(c_graph), times(j_graph), times(g_graph)
    sizes = sorted(s for s in tc if s <= SMALL_MAX)

    def differences(a_by, b_by):
        """Per size (small sizes, ascending), the median of a minus the median of b, where both were measured."""
        return [d for d in (minus(med(a_by, s), med(b_by, s)) for s in sizes) if d is not None]

    def overhead(a_by, b_by):
        diffs = differences(a_by, b_by)
        return max(diffs) if diffs else None

    ratios = []
    large_rows = []
    if c_large and j_large:
        cmap = {case_key(r): r for r in c_large["results"]}
        gmap = {case_key(r): r for r in (g_large or {}).get("results", [])}
        for r in j_large["results"]:
            k = case_key(r)
            c = cmap.get(k)
            if c is None or int(r["size"]) < LARGE_MIN:
                continue
            ratio = r["busbw"] / c["busbw"] if c["busbw"] else None
            if ratio is not None:
                ratios.append(ratio)
            g = gmap.get(k)
            large_rows.append((r["op"], int(r["size"]), r["placement"], c["busbw"], r["busbw"], g["busbw"] if g else None, ratio))

    def init_values(ds):
        return [d["init_ms"] for d in ds if d.get("init_ms") is not None]

    def repeat_values(ds):
        return [v for d in ds for v in d.get("init_repeat_ms", [])]

    c_inits, j_inits, g_inits = docs(jd, "c-init-"), docs(jd, "java-np-init-"), docs(jd, "java-g-init-")
    c_all, j_all, g_all = (c_small + c_graph + c_larges + c_inits, j_small + j_graph + j_larges + j_inits,
                           g_small + g_graph + g_larges + g_inits)
    c_init_v, j_init_v, g_init_v = init_values(c_all), init_values(j_all), init_values(g_all)
    c_init, j_init, g_init = median_or_none(c_init_v), median_or_none(j_init_v), median_or_none(g_init_v)
    c_rep, j_rep, g_rep = repeat_values(c_inits), repeat_values(j_inits), repeat_values(g_inits)
    c_rep_med, j_rep_med, g_rep_med = median_or_none(c_rep), median_or_none(j_rep), median_or_none(g_rep)
    t_init = torch.get("init_ms") if torch else None

    def alloc_max(ds):
        v = [r["alloc_bytes"] for d in ds for r in d.get("results", []) if r.get("alloc_bytes") is not None]
        return max(v) if v else None

    alloc, alloc_g = alloc_max(j_small), alloc_max(g_small)

    def busbw(doc, size, placement="out-of-place"):
        """The median bus bandwidth of all_reduce at size in a median_doc, or None."""
        for r in (doc or {}).get("results", []):
            if r["op"] == "all_reduce" and int(r["size"]) == size and r["placement"] == placement:
                return r["busbw"]
        return None

    def ratio(size, placement="out-of-place"):
        c, j = busbw(c_large, size, placement), busbw(j_large, size, placement)
        return j / c if c and j is not None else None

    other_ratios = [r[6] for r in large_rows if r[0] != "alltoall" and r[6] is not None]
    diffs = differences(tj, tc)  # Java - C per small size, eager, out of place
    jmh_max, jmh_rows = jmh_alloc(a.jmh) if a.jmh else (None, [])
    any_doc = next((d for d in c_small + j_small + [c_large, j_large] if d), {})
    latest = {
        "date": a.date,
        "machine": a.machine,
        "nccl_version": any_doc.get("nccl_version"),
        "ranks": any_doc.get("ranks"),
        "native_small_us": med(tc, 8),
        "java_small_us": med(tj, 8),
        "torch_small_us": med(tt, 8),
        "small_overhead_us": max(diffs) if diffs else None,
        "graph_overhead_us": overhead(gj, gc),
        "min_busbw_ratio_64MiB_up": min(ratios) if ratios else None,
        "init_overhead_ms": minus(j_init, c_init),
        "init_repeat_overhead_ms": minus(j_rep_med, c_rep_med),
        "alloc_bytes_per_call": (round(jmh_max, 3) if jmh_max is not None
                                 else round(alloc, 3) if alloc is not None else None),
        "small_overhead_fast_us": overhead(fj, fc),
        "native_graph_small_us": med(gc, 8),
        "java_graph_small_us": med(gj, 8),
        "native_busbw_64MiB_gbps": busbw(c_large, LARGE_MIN),
        "java_busbw_64MiB_gbps": busbw(j_large, LARGE_MIN),
        "busbw_ratio_64MiB": ratio(LARGE_MIN),
        "busbw_ratio_64MiB_in_place": ratio(LARGE_MIN, "in-place"),
        "min_busbw_ratio_64MiB_up_but_alltoall": min(other_ratios) if other_ratios else None,
        "native_busbw_1GiB_gbps": busbw(c_large, 1 << 30),
        "java_busbw_1GiB_gbps": busbw(j_large, 1 << 30),
        "busbw_ratio_1GiB": ratio(1 << 30),
        "native_init_ms": c_init,
        "java_init_ms": j_init,
        "torch_init_ms": t_init,
        "small_repeats": len(c_small),
        "large_repeats": len(c_larges),
    }
    for k, v in list(latest.items()):
        if isinstance(v, float):
            latest[k] = round(v, 4)
    os.makedirs(a.docs, exist_ok=True)
    latest_path = os.path.join(a.docs, "benchmark-latest.json")
    written = dict(latest)
    report_name = f"{a.date}-benchmark.md"
    sources = {k: report_name for k, v in latest.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if os.path.exists(latest_path):   # keys other reports keep there (the frontier's, DDP's, ...) stay
        with open(latest_path) as f:
            try:
                old = json.load(f)
            except ValueError:
                old = {}
        old = old if isinstance(old, dict) else {}
        old_sources = old.get("sources") if isinstance(old.get("sources"), dict) else {}
        replaced = old_sources.get("native_small_us")   # the report of the run before this one
        for k, v in old.items():
            if k in written or k == "sources":
                continue
            source = old_sources.get(k)
            if source is not None and source != replaced:
                written[k] = v
                sources[k] = source
            elif source is None and k in OTHER_REPORTS_KEYS:
                written[k] = v
    written["sources"] = sources
    with open(latest_path, "w") as f:
        json.dump(written, f, indent=2)
        f.write("\n")

    n = latest["ranks"]
    L = []
    L.append(f"# nccl4j performance against C, {a.date}")
    L.append("")
    L.append(f"Machine: {a.machine}. NCCL {latest['nccl_version']}, {n} ranks. Made by `scripts/bench/perf-compare.sh` "
             "(raw logs and JSON in its output directory); every figure is a CUDA-event time over the timed loop, "
             "as nccl4j-perf and nccl_perf_baseline take it (see `scripts/bench/native/nccl_perf_baseline.cu`).")
    if a.failures:
        L.append("")
        L.append(f"**{a.failures} run(s) failed**: the tables below miss their figures (see the raw logs).")
    L.append("")
    L.append("Runs: **C** = `nccl_perf_baseline` under `mpirun -np N` (one process per GPU); **Java** = "
             "`nccl4j-perf` under `mpirun -np N` (one process per GPU, `Communicator.fromEnvironment`); "
             "**Java -g** = `nccl4j-perf -g N` (one process, `Communicator.initAll`, one "
             "`Nccl.groupStart()`/`groupEnd()` per iteration); **torch** = `torch.distributed.all_reduce` under torchrun.")
    L.append("")
    L.append("## Summary (benchmark-latest.json)")
    L.append("")
    L.append("| key | value |")
    L.append("|---|---|")
    for k, v in latest.items():
        L.append(f"| {k} | {fmt(v, 3) if isinstance(v, float) else v} |")
    L.append("")
    reps = len(c_small)
    L.append(f"## Small all_reduce, eager (float sum, out of place; median of {reps} runs of 1000 iterations)")
    L.append("")
    L.append("| size | C (us) | Java (us) | Java - C (us) | Java / C | Java -g (us) | torch (us, in place) |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        c, j, g, t = med(tc, s), med(tj, s), med(tg, s), med(tt, s)
        L.append(f"| {human(s)} | {fmt(c)} | {fmt(j)} | {fmt(minus(j, c))} | "
                 f"{fmt(j / c if c and j is not None else None, 3)} | {fmt(g)} | {fmt(t)} |")
    L.append("")
    if diffs:
        ahead = sum(1 for d in diffs if d <= 0)
        L.append(f"Over the {len(diffs)} sizes: mean of Java - C {statistics.mean(diffs):+.3f} us, median "
                 f"{statistics.median(diffs):+.3f} us; Java at or below C at {ahead} of {len(diffs)} sizes.")
        L.append("")

    def run_modes(ds):
        # each run's median time over 8 B..4 KiB out of place: a process sits in one of two modes for the whole run
        out = []
        for d in ds:
            v = [r["time_us"] for r in d.get("results", []) if r["op"] == "all_reduce"
                 and r["placement"] == "out-of-place" and 0 < r["size"] <= 4096]
            if v:
                out.append(statistics.median(v))
        return out

    mc, mj = run_modes(c_small), run_modes(j_small)
    if mc and mj:
        L.append("Each run's median over 8 B..4 KiB (us), in run order; C: "
                 + ", ".join(f"{x:.2f}" for x in mc) + "; Java: " + ", ".join(f"{x:.2f}" for x in mj) + ".")
        L.append("")
        cut = mode_cut(mc + mj)
        if cut is not None:
            L.append(f"Split at {cut:.2f} us into the two modes (Otsu's threshold over the runs' medians), "
                     "Java - C per size within each mode:")
            L.append("")
            L.append("| mode | runs (C, Java) | Java - C per size, 8 B..64 KiB (us) | mean |")
            L.append("|---|---|---|---:|")
            for name, fast in (("fast", True), ("slow", False)):
                cs = [d for d, m in zip(c_small, mc) if (m < cut) == fast]
                js = [d for d, m in zip(j_small, mj) if (m < cut) == fast]
                if not cs or not js:
                    L.append(f"| {name} | {len(cs)}, {len(js)} | (a side has no run in this mode) | |")
                    continue
                ds = differences(times(js), times(cs))
                L.append(f"| {name} | {len(cs)}, {len(js)} | {' '.join(f'{x:+.2f}' for x in ds)} | "
                         f"{statistics.mean(ds):+.2f} |")
            L.append("")
    L.append(f"Fast points only: at each size, a run's time counts when it is less than {FAST_MARGIN_US:.1f} us above "
             "the fastest time of any C or Java run at that size, so that a run that was in the slow state (or fell "
             "into it midway) drops out of the sizes it was slow at only; the columns are the medians of those times "
             f"and how many of the {len(j_small)} Java and {len(c_small)} C runs they are (small_overhead_fast_us: the "
             "largest Java - C out of place).")
    L.append("")
    L.append("| size | C fast (us) | Java fast (us) | Java - C (us) | fast points (Java / C) | in place: C fast (us) "
             "| Java fast (us) | Java - C (us) | fast points (Java / C) |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        cells = []
        for c_by, j_by in ((fc, fj), (fci, fji)):
            c, j = med(c_by, s), med(j_by, s)
            cells += [fmt(c), fmt(j), fmt(minus(j, c)), f"{len(j_by.get(s, []))} / {len(c_by.get(s, []))}"]
        L.append(f"| {human(s)} | " + " | ".join(cells) + " |")
    L.append("")
    def three_way(c_by, j_by, g_by):
        """The small-size table of C, Java, Java - C and Java -g medians."""
        L.append("| size | C (us) | Java (us) | Java - C (us) | Java -g (us) |")
        L.append("|---:|---:|---:|---:|---:|")
        for s in sizes:
            c, j, g = med(c_by, s), med(j_by, s), med(g_by, s)
            L.append(f"| {human(s)} | {fmt(c)} | {fmt(j)} | {fmt(minus(j, c))} | {fmt(g)} |")
        L.append("")

    L.append("In place (same runs):")
    L.append("")
    three_way(tci, tji, tgi)
    L.append(f"## Small all_reduce, CUDA graph (100 iterations captured, the graph launched 10 times; median of {len(c_graph)} runs)")
    L.append("")
    three_way(gc, gj, gg)
    L.append(f"## Every operation at 64 MiB and up (bus bandwidth, GB/s; -n 100, median of {len(c_larges)} runs)")
    L.append("")
    L.append("| operation | size | placement | C | Java | Java -g | Java / C |")
    L.append("|---|---:|---|---:|---:|---:|---:|")
    for op, s, pl, c, j, g, r in large_rows:
        L.append(f"| {op} | {human(s)} | {pl} | {fmt(c)} | {fmt(j)} | {fmt(g)} | {fmt(r, 3)} |")
    L.append("")
    below = [(op, s, pl) for op, s, pl, c, j, g, r in large_rows if r is not None and r < 0.995]
    if below:
        L.append("Every run of the cases below 0.995 (GB/s, in run order), to tell a per-run level from a steady gap. "
                 f"Where the runs of both sides fall into two levels at least {LEVEL_GAP:.0%} apart (Otsu's split over "
                 "all of them), each level's medians are compared too:")
        L.append("")
        per_run = lambda ds, k: [r["busbw"] for d in ds for r in d.get("results", [])
                                 if (r["op"], int(r["size"]), r["placement"]) == k and r["type"] == "float"
                                 and r["redop"] in ("sum", "none")]
        for k in below:
            cr, jr = per_run(c_larges, k), per_run(j_larges, k)
            L.append(f"- {k[0]} {human(k[1])} {k[2]}: C " + " ".join(f"{v:.1f}" for v in cr)
                     + "; Java " + " ".join(f"{v:.1f}" for v in jr))
            two = level_line(cr, jr)
            if two:
                L.append(two)
        L.append("")
    if a.png:
        L.append("## all_reduce bus bandwidth, 8 B to 1 GiB")
        L.append("")
        L.append(f"![all_reduce bus bandwidth]({a.png})")
        L.append("")
    L.append("## Communicator init (ms; CUDA context made before the clock starts)")
    L.append("")
    L.append("C times `ncclGetUniqueId` + `MPI_Bcast` + `ncclCommInitRank` after an `MPI_Barrier`; Java (one process "
             "per GPU) times `Communicator.fromEnvironment()` (launch detection, the TCP id exchange, "
             "`ncclCommInitRank`) after an untimed id exchange that waits for every rank's JVM; Java -g times "
             "`Communicator.initAll` (`ncclCommInitAll`). *First*: the first communicator of each process, median "
             "over the processes. *Re-created*: `--init_repeats`, the same creation again in the same process after "
             "a barrier, destroyed after each; median over every repeat of every process.")
    L.append("")
    L.append("| | C | Java | Java - C | Java -g | torch (init_process_group + barrier) |")
    L.append("|---|---:|---:|---:|---:|---:|")
    diff, rdiff = minus(j_init, c_init), minus(j_rep_med, c_rep_med)
    L.append(f"| first (processes: C {len(c_init_v)}, Java {len(j_init_v)}) | {fmt(c_init, 1)} | "
             f"{fmt(j_init, 1)} | {fmt(diff, 1)} | {fmt(g_init, 1)} | {fmt(t_init, 1)} |")
    L.append(f"| re-created (samples: C {len(c_rep)}, Java {len(j_rep)}) | {fmt(c_rep_med, 1)} | {fmt(j_rep_med, 1)} | "
             f"{fmt(rdiff, 1)} | {fmt(g_rep_med, 1)} | |")
    if c_rep and j_rep:
        q = lambda v: statistics.quantiles(v, n=4) if len(v) >= 2 else [v[0]] * 3
        L.append("")
        L.append(f"Spread of the re-created times: C min {min(c_rep):.1f}, quartiles "
                 f"{' / '.join(f'{x:.1f}' for x in q(c_rep))}, max {max(c_rep):.1f}; Java min {min(j_rep):.1f}, quartiles "
                 f"{' / '.join(f'{x:.1f}' for x in q(j_rep))}, max {max(j_rep):.1f}.")
    L.append("")
    L.append("## Java heap allocation while issuing (bytes per iteration, HotSpot's per-thread counter)")
    L.append("")
    L.append(f"- one process per GPU (one `allReduce` call per iteration): max {fmt(alloc, 3)}")
    L.append(f"- one process, `-g {n}` (`Nccl.groupStart()`, {n} `allReduce` calls, `Nccl.groupEnd()` per "
             f"iteration): max {fmt(alloc_g, 3)}")
    L.append("")
    L.append("The in-loop counts are HotSpot's per-thread allocation counter over each timed loop, divided by the "
             "iterations; a one-time allocation early in a run (class initialization, the first call of a path) "
             "shows there as a fraction of a byte per call.")
    if jmh_rows:
        L.append("")
        L.append(f"JMH with `-prof gc` against the stub NCCL (`scripts/bench/jmh-alloc.sh`, CPU): "
                 f"alloc_bytes_per_call = {fmt(jmh_max, 3)} (max over the benchmarks below except `groupOfTwo`, "
                 f"whose 16 B are the `Group` object of `Nccl.group()`; `Nccl.groupStart()`/`groupEnd()` make none).")
        L.append("")
        L.append("| benchmark | gc.alloc.rate.norm (B/op) |")
        L.append("|---|---:|")
        for name, b in jmh_rows:
            L.append(f"| {name} | {b:.3f} |")
    L.append("")
    L.append("## Data check (every operation, 1 KiB..1 MiB, every root, -c 1)")
    L.append("")
    L.append("| run | wrong elements |")
    L.append("|---|---:|")
    for name, d in checks.items():
        if d is None:
            L.append(f"| {name} | run missing |")
            continue
        w = sum(r["wrong"] or 0 for r in d.get("results", []))
        L.append(f"| {name} | {w} |")
    L.append("")
    with open(os.path.join(a.docs, a.date + "-benchmark.md"), "w") as f:
        f.write("\n".join(L))
    print(json.dumps(written, indent=2))


if __name__ == "__main__":
    main()
