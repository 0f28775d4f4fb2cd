#!/usr/bin/env python3
"""Draws Chrome traces (the JSON arrays DdpTraining and ShardedTraining write with --trace) as one SVG timeline.

    trace_svg.py OUT.svg TRACE.json [TRACE.json ...] [--from MS] [--to MS] [--title TEXT]

One row per process and track ("compute", "nccl"), in the order met; each complete event ("ph": "X") a box, coloured
by what its name starts with (forward, backward, wait, all-gather, reduce-scatter, all-reduce, Adam, optimizer), with
a time axis in ms and a legend. SVG is plain text: no font stack, no image library, so it draws on any machine (the
headless GPU nodes included) and shows in a browser or on a repository's page. Only the Python standard library.
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

COLOURS = [("forward", "#4e79a7"), ("backward", "#59a14f"), ("wait", "#e15759"), ("all-gather", "#f28e2b"),
           ("reduce-scatter", "#b07aa1"), ("all-reduce", "#b07aa1"), ("adam", "#9c9c9c"), ("optimizer", "#9c9c9c")]
OTHER = "#bab0ac"
LEFT, RIGHT, ROW, GAP, TOP = 230, 20, 26, 8, 46


def colour(name):
    low = name.lower()
    for prefix, c in COLOURS:
        if low.startswith(prefix):
            return c
    return OTHER


def load(paths):
    """[(process name, track, [(name, start ms, end ms)])] in the order the files and tracks come."""
    rows, names = {}, {}
    order = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            events = json.load(f)
        for e in events:
            if e.get("ph") == "M" and e.get("name") == "process_name":
                names[e.get("pid")] = e.get("args", {}).get("name", str(e.get("pid")))
        for e in events:
            if e.get("ph") != "X":
                continue
            key = (path, e.get("pid"), e.get("tid"))
            if key not in rows:
                rows[key] = []
                order.append(key)
            start = float(e["ts"]) / 1000.0
            rows[key].append((e.get("name", ""), start, start + float(e.get("dur", 0)) / 1000.0))
    return [(names.get(k[1], str(k[1])), str(k[2]), rows[k]) for k in order]


def nice_step(span):
    raw = span / 10.0
    for m in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000):
        if m >= raw:
            return m
    return 10000


def draw(rows, lo, hi, title, width=1400):
    plot = width - LEFT - RIGHT
    height = TOP + len(rows) * (ROW + GAP) + 70

    def x(ms):
        return LEFT + (ms - lo) / (hi - lo) * plot

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    step = nice_step(hi - lo)
    t = (int(lo // step) + 1) * step if lo % step else lo
    axis_y = TOP + len(rows) * (ROW + GAP)
    while t <= hi + 1e-9:
        out.append(f'<line x1="{x(t):.1f}" y1="{TOP - 6}" x2="{x(t):.1f}" y2="{axis_y}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{x(t):.1f}" y="{axis_y + 14}" text-anchor="middle">{t:g}</text>')
        t += step
    out.append(f'<text x="{LEFT + plot / 2:.0f}" y="{axis_y + 30}" text-anchor="middle">ms</text>')
    for i, (proc, track, events) in enumerate(rows):
        y = TOP + i * (ROW + GAP)
        out.append(f'<text x="{LEFT - 8}" y="{y + ROW / 2 + 4:.0f}" text-anchor="end">{escape(proc)} · '
                   f'{escape(track)}</text>')
        for name, s, e in events:
            if e < lo or s > hi:
                continue
            s, e = max(s, lo), min(e, hi)
            w = max(0.5, x(e) - x(s))
            out.append(f'<rect x="{x(s):.2f}" y="{y}" width="{w:.2f}" height="{ROW}" fill="{colour(name)}" '
                       f'stroke="white" stroke-width="0.3"><title>{escape(name)}: {s:.3f}-{e:.3f} ms</title></rect>')
    ly = axis_y + 44
    lx = LEFT
    for label, c in [("forward", COLOURS[0][1]), ("backward", COLOURS[1][1]), ("wait", COLOURS[2][1]),
                     ("all-gather", COLOURS[3][1]), ("reduce-scatter / all-reduce", COLOURS[4][1]),
                     ("Adam", COLOURS[6][1])]:
        out.append(f'<rect x="{lx}" y="{ly}" width="14" height="14" fill="{c}"/>')
        out.append(f'<text x="{lx + 20}" y="{ly + 12}">{escape(label)}</text>')
        lx += 30 + 8 * len(label)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description="Chrome traces as one SVG timeline")
    p.add_argument("out")
    p.add_argument("traces", nargs="+")
    p.add_argument("--from", dest="lo", type=float, help="the first ms shown (default: the first event)")
    p.add_argument("--to", dest="hi", type=float, help="the last ms shown (default: the last event's end)")
    p.add_argument("--title", default="timeline")
    a = p.parse_args(argv)
    rows = load(a.traces)
    spans = [(s, e) for _, _, evs in rows for _, s, e in evs]
    if not spans:
        print("trace_svg: no complete events in " + ", ".join(a.traces), file=sys.stderr)
        return 1
    lo = a.lo if a.lo is not None else min(s for s, _ in spans)
    hi = a.hi if a.hi is not None else max(e for _, e in spans)
    if not hi > lo:
        print(f"trace_svg: --from {lo} must be below --to {hi}", file=sys.stderr)
        return 2
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(draw(rows, lo, hi, a.title))
    print(f"{a.out}: {len(rows)} tracks, {sum(len(r[2]) for r in rows)} events, {lo:.3f}-{hi:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
