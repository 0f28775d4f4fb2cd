"""Pieces that perf_report.py and ab_report.py share (imported from the scripts' own directory)."""
import statistics

CASE = ("op", "size", "placement", "type", "redop", "root")


def human(n):
    """A byte count as the report shows it: "64 KiB", "1 GiB", "8 B"."""
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s and n % s == 0:
            return f"{n // s} {unit}"
    return f"{n} B"


def median_or_none(v):
    """The median of v, or None when v is empty or None."""
    return statistics.median(v) if v else None


def minus(a, b):
    """a - b, or None when either is None."""
    return a - b if a is not None and b is not None else None


def case_key(r):
    """A result's case: (op, size, placement, type, redop, root), the size as an int."""
    return tuple(int(r[k]) if k == "size" else r[k] for k in CASE)
