#!/usr/bin/env python3
"""nccl_choices.py: what NCCL chose in each run of scripts/bench/frontier.sh, beside the run's time, read from NCCL's
own log, so that runs of one cell at two levels are told apart by what NCCL did, or shown not to differ in it.

    nccl_choices.py OUT_DIR [--tolerance PCT]

OUT_DIR is frontier.sh's, with raw/RUN.log and raw/RUN.rank.sh for each run (RUN: LIB-npN-RG-caseI-SIDE-ROUND), made
with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,REG (frontier.sh forwards both to every rank; nccl4j-perf
with NCCL4J_NCCL_LOG=off prints NCCL's lines as nccl-tests does). The facts of a run:
  channels       NCCL's "N coll channels, ..., N nvls channels, N p2p channels, ..." (INIT), per distinct value
  graph          the graph search's "Pattern P, crossNic C, nChannels N, bw B/B, type T/T, ..." (GRAPH)
  rings          the ring order of each channel ("Channel NN/MM :  0 1 2 3"), compared whole, shown as a count
  choice         per size, the algorithm, protocol and channels of the collectives of that size ("OP: BYTES Bytes ->
                 Algo A proto P channel{Lo..Hi}={a..b}"), or the symmetric kernel ("OP [Symmetric]: BYTES Bytes ->
                 Kernel K nchannels N ..."), with how many collectives took each (TUNING; rank 0 only). BYTES is the
                 count times the type's size: the whole buffer for all-reduce, broadcast and reduce, one rank's part
                 (size / ranks) for all-gather and reduce-scatter; alltoall, gather, scatter and sendrecv are
                 point-to-point and have no such line
  registrations  how many of NCCL's REG lines said a buffer was registered with the communicator, IPC-registered
                 with a peer, reused, or failed to register
Prints, per cell (ranks, -R, operation, size, placement), the runs sorted by time with their facts; when the runs'
times spread more than --tolerance percent (default 1.5), the widest gap between two consecutive times splits them into
a faster and a slower level, and a "levels:" line names each fact whose values in the slower runs are none of those in
the faster ones, or says that no logged fact tells the levels apart. Exit status 0; 2 on a usage error or an OUT_DIR
without runs.
"""
import argparse
import glob
import os
import re
import sys
from collections import Counter, defaultdict

RUN = re.compile(r'^(?P<lib>.+)-np(?P<np>\d+)-R(?P<reg>\d)-case(?P<ci>\d+)-(?P<side>c|java)-(?P<round>\d+)$')
PREFIX = re.compile(r'^\[\d+,\d+\]<std(?:out|err)>:')
CHANNELS = re.compile(r'(\d+) coll channels, \d+ collnet channels, (\d+) nvls channels, (\d+) p2p channels')
PATTERN = re.compile(r'Pattern (\d+), crossNic \d+, nChannels (\d+), bw ([\d.]+)/([\d.]+), type (\S+)/(\S+),')
RING = re.compile(r'Channel (\d+)/(\d+) :((?:\s+\d+)+)\s*$')
TUNE = re.compile(r'(\w+): (\d+) Bytes -> Algo (\S+) proto (\S+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}')
SYMK = re.compile(r'(\w+) \[Symmetric\]: (\d+) Bytes -> Kernel (\S+) nchannels (\d+)')
REGS = (('registered', re.compile(r'register comm \S+ buffer')), ('IPC register', re.compile(r'IPC register buffer')),
        ('reuse', re.compile(r'reuse (?:registered|buffer)')), ('failed', re.compile(r'failed to \w+ register')))
# the tuning line's function name for each nccl-tests program, and whether its bytes are one rank's part
FUNCS = {'all_reduce': ('AllReduce', False), 'broadcast': ('Broadcast', False), 'reduce': ('Reduce', False),
         'all_gather': ('AllGather', True), 'reduce_scatter': ('ReduceScatter', True)}
KEYS = ('channels', 'graph', 'rings', 'choice', 'registrations')


def num(v):
    return '%g' % float(v)


class Run:
    """One run's log: its size lines and NCCL's facts."""

    def __init__(self, name, m, log, rank_sh):
        self.name, self.lib, self.np, self.reg = name, m['lib'], int(m['np']), int(m['reg'])
        self.side, self.round = m['side'], int(m['round'])
        self.op, self.case = case_of(rank_sh)
        self.times = {}   # (size, placement) -> (time us, busbw)
        channels, graph, rings, tunes, regs = set(), set(), set(), defaultdict(Counter), Counter()
        for line in log:
            line = PREFIX.sub('', line.rstrip('\n'))
            t = line.split()
            if len(t) >= 12 and t[0].isdigit() and t[1].isdigit():
                self.times[(int(t[0]), 'out of place')] = (float(t[5]), t[7])
                self.times[(int(t[0]), 'in place')] = (float(t[9]), t[11])
                continue
            if 'NCCL' not in line:
                continue
            g = CHANNELS.search(line)
            if g:
                channels.add('%s coll, %s nvls, %s p2p' % g.groups())
            g = PATTERN.search(line)
            if g:
                graph.add('pattern %s, %s ch, bw %s/%s, %s/%s' % (g[1], g[2], num(g[3]), num(g[4]), g[5], g[6]))
            g = RING.search(line)
            if g:
                rings.add((int(g[1]), int(g[2]), ' '.join(g[3].split())))
            g = TUNE.search(line)
            if g:
                tunes[(g[1], int(g[2]))]['%s/%s ch %s-%s' % (g[3], g[4], g[5], g[6])] += 1
            g = SYMK.search(line)
            if g:
                tunes[(g[1], int(g[2]))]['symmetric %s, %s ch' % (g[3], g[4])] += 1
            for label, rx in REGS:
                if rx.search(line):
                    regs[label] += 1
        self.facts = {'channels': '; '.join(sorted(channels)) or '-', 'graph': '; '.join(sorted(graph)) or '-',
                      'rings': ' | '.join('%d/%d: %s' % r for r in sorted(rings)),
                      'registrations': ', '.join('%s %d' % (k, regs[k]) for k, _ in REGS if regs[k]) or '-'}
        self.tunes = tunes
        self.rings = len(rings)

    def choice(self, size):
        func, part = FUNCS.get(self.op[:-5] if self.op.endswith('_perf') else self.op, (None, False))
        if func is None:
            return '- (point-to-point)'
        c = self.tunes.get((func, size // self.np if part else size))
        if not c:
            return '-'
        return ', '.join('%s x%d' % (k, n) for k, n in c.most_common())

    def fact(self, key, size):
        return self.choice(size) if key == 'choice' else self.facts[key]


def case_of(rank_sh):
    """The operation and the case's arguments (from the program on) of a run's rank script."""
    words = rank_sh.split()
    for i, w in enumerate(words):
        base = os.path.basename(w)
        if base.endswith('_perf'):
            rest = words[i + 1:]
            if '-R' in rest:
                rest = rest[:rest.index('-R')]
            return base, ' '.join([base] + rest)
    return '?', '?'


def levels(runs, size, tolerance):
    """The levels line of a cell's runs (sorted by time), or None when they spread within the tolerance."""
    times = [r.times[size][0] for r in runs]
    if times[0] <= 0 or times[-1] / times[0] - 1 <= tolerance / 100:
        return None
    cut = max(range(1, len(times)), key=lambda i: times[i] / times[i - 1])
    fast, slow = runs[:cut], runs[cut:]
    who = ', '.join('%s %d of %d' % (s, sum(r.side == s for r in slow), sum(r.side == s for r in runs))
                    for s in ('c', 'java') if any(r.side == s for r in runs))
    head = 'levels: %d faster (%.2f-%.2f us), %d slower (%.2f-%.2f us; %s)' % (
        len(fast), times[0], times[cut - 1], len(slow), times[cut], times[-1], who)
    differ = []
    for key in KEYS:
        f = {r.fact(key, size[0]) for r in fast}
        s = {r.fact(key, size[0]) for r in slow}
        if f & s:
            continue
        if key == 'rings':
            differ.append("rings (no slower run has a faster run's ring orders)")
        else:
            differ.append('%s (slower: %s; faster: %s)' % (key, ' / '.join(sorted(s)), ' / '.join(sorted(f))))
    if differ:
        return head + '; they differ in ' + '; '.join(differ)
    return head + '; no logged NCCL fact tells the levels apart'


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('out_dir')
    ap.add_argument('--tolerance', type=float, default=1.5)
    a = ap.parse_args(argv)
    if a.tolerance < 0:
        ap.error('--tolerance takes a percentage of 0 or more (got %s)' % a.tolerance)
    runs = []
    for path in sorted(glob.glob(os.path.join(a.out_dir, 'raw', '*.log'))):
        name = os.path.basename(path)[:-4]
        m = RUN.match(name)
        sh = os.path.join(a.out_dir, 'raw', name + '.rank.sh')
        if not m or not os.path.isfile(sh):
            continue
        with open(path, errors='replace') as log, open(sh) as rank:
            runs.append(Run(name, m, log, rank.read()))
    if not runs:
        print('nccl_choices.py: no runs of frontier.sh in %s (raw/RUN.log with raw/RUN.rank.sh)' % a.out_dir,
              file=sys.stderr)
        return 2
    cells = defaultdict(list)
    for r in runs:
        for size in r.times:
            cells[(r.np, r.reg, r.case, size[0], size[1] == 'in place')].append(r)
    logged = any(r.facts['channels'] != '-' or r.tunes for r in runs)
    print('# What NCCL chose, run by run\n')
    if not logged:
        print('No NCCL line in the logs: run frontier.sh with NCCL_DEBUG=INFO and '
              'NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,REG exported.\n')
    for (np, reg, case, size, inplace), rs in sorted(cells.items()):
        key = (size, 'in place' if inplace else 'out of place')
        rs = sorted(rs, key=lambda r: (r.times[key][0], r.side, r.round))
        print('## %d ranks, -R %d, `%s`, %d B, %s\n' % (np, reg, case, size, key[1]))
        print('| run | time us | busbw | channels | graph | rings | choice | registrations |')
        print('|---|---:|---:|---|---|---|---|---|')
        for r in rs:
            print('| %s %d | %.2f | %s | %s | %s | %d | %s | %s |' % (
                r.side, r.round, r.times[key][0], r.times[key][1], r.facts['channels'], r.facts['graph'], r.rings,
                r.choice(size), r.facts['registrations']))
        line = levels(rs, key, a.tolerance)
        print('\n' + (line or 'one level: the times are within %g %% of each other' % a.tolerance) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
