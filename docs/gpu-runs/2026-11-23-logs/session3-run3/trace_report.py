#!/usr/bin/env python3
"""Experiment (session 3, device call 3): per trace-<pid>.csv of kernel_trace.c, the NCCL kernels of the last
N at least 50 us long (the last timed loop), their median duration and the median gap from one kernel's end to the next one's start."""
import glob, statistics, sys

def summary(path, n, min_us=50.0):
    ks = []
    for line in open(path):
        if line.startswith('#'):
            continue
        s, e, dev, st, name = line.rstrip('\n').split(',', 4)
        if 'nccl' in name.lower() and (int(e) - int(s)) / 1e3 >= min_us:
            ks.append((int(s), int(e), int(dev), name))
    ks.sort()
    ks = ks[-n:]
    if len(ks) < 2:
        return None
    dur = [(e - s) / 1e3 for s, e, _, _ in ks]
    gap = [(ks[i + 1][0] - ks[i][1]) / 1e3 for i in range(len(ks) - 1)]
    period = (ks[-1][0] - ks[0][0]) / 1e3 / (len(ks) - 1)
    q = lambda xs, p: sorted(xs)[int(p * (len(xs) - 1))]
    return (len(ks), ks[0][2], statistics.median(dur), q(dur, 0.1), q(dur, 0.9), statistics.median(gap),
            q(gap, 0.9), period, ks[-1][3][:40])

n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
print('| trace | kernels | device | duration p50 / p10 / p90 (us) | gap p50 / p90 (us) | start-to-start (us) | kernel |')
print('|---|---:|---:|---|---|---:|---|')
for d in sys.argv[1].split(','):
    for p in sorted(glob.glob(d + '/trace-*.csv')):
        s = summary(p, n)
        if s:
            print('| %s | %d | %d | %.2f / %.2f / %.2f | %.2f / %.2f | %.2f | %s |' % ((p.split('/')[-2] + '/' + p.split('/')[-1],) + s))
        else:
            print('| %s | no NCCL kernels |' % p)
