#!/usr/bin/env python3
"""PyTorch side of the nccl4j sharded-training comparison, and the report of both sides.

train (the default): FSDP2 (torch.distributed.fsdp.fully_shard per layer, then on the root; default prefetching) of
N x (Linear(H, H) + ReLU), float32, TF32 off, MSE loss against labels N(0.5, 0.25^2), inputs N(0, 1) drawn fresh
each step on the GPU, batch B per rank, torch.optim.Adam(lr), as org.nccl4j.examples.ShardedTraining does. Each step
is timed with CUDA events and a synchronize; the median is over steps 3..N (1-based). Launched by torchrun:

    python3 -m torch.distributed.run --standalone --nproc_per_node=2 sharded_compare.py [--layers 40] [--size 8192]
        [--batch 1024] [--steps 20] [--share-gpu] [--log-file 'dir/fsdp2-rank{rank}.log']

--share-gpu puts every rank on GPU 0 with its own NCCL_HOSTID (a correctness run on a one-GPU machine).
Every line a rank prints starts with "[rank r]"; each rank ends with
    [rank r] RESULT impl=fsdp2 mode=fsdp2 rank=r ranks=n ... median_ms=X peak_alloc_gib=X device_used_gib=X ...
and, with --log-file, writes its lines to its own file as well (never interleaved with another rank's).

report: reads the RESULT lines of every round and rank of both sides from per-rank files and prints a markdown
table, writing the figures to a JSON file:

    sharded_compare.py report DIR --np 2 --json DIR/sharded-compare.json
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

FIRST_MEASURED_STEP = 3


def parse_train_args(argv):
    p = argparse.ArgumentParser(description="FSDP2 side of sharded-compare.sh")
    p.add_argument("--layers", type=int, default=40)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--lr", type=float, default=0.0001)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--share-gpu", action="store_true", help="every rank on GPU 0, its own NCCL_HOSTID")
    p.add_argument("--log-file", default=None, help="also write this rank's lines there ({rank} is replaced)")
    a = p.parse_args(argv)
    if min(a.layers, a.size, a.batch, a.steps) < 1 or not a.lr > 0:
        p.error("--layers, --size, --batch, --steps and --lr must be positive")
    return a


def train(argv):
    a = parse_train_args(argv)
    if "RANK" not in os.environ:
        sys.exit("sharded_compare.py: launch with torchrun (python3 -m torch.distributed.run --nproc_per_node=N)")
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if a.share_gpu:
        os.environ["NCCL_HOSTID"] = f"fsdp2-host{rank}"   # NCCL reads it when the communicator is made
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.fsdp import fully_shard

    tag = f"[rank {rank}] "
    log = open(a.log_file.replace("{rank}", str(rank)), "w") if a.log_file else None

    def say(text):
        print(tag + text, flush=True)
        if log is not None:
            log.write(tag + text + "\n")
            log.flush()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", 0 if a.share_gpu else local)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    world = dist.get_world_size()

    torch.manual_seed(a.seed)   # the same initial weights on every rank
    layers = []
    for _ in range(a.layers):   # each layer made on the GPU and sharded at once: one whole layer at a time
        layer = nn.Sequential(nn.Linear(a.size, a.size, device=device), nn.ReLU())
        fully_shard(layer)
        layers.append(layer)
    model = nn.Sequential(*layers)
    fully_shard(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=a.lr)
    loss_fn = nn.MSELoss()
    torch.manual_seed(a.seed + 1 + rank)   # different data on each rank
    params = a.layers * (a.size * a.size + a.size)
    if rank == 0:
        v = torch.cuda.nccl.version()
        nccl = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
        say(f"sharded_compare.py: FSDP2 fully_shard per layer, {world} rank(s), torch {torch.__version__}, NCCL {nccl}, "
            f"{torch.cuda.get_device_name(device)}, {a.layers} x (Linear({a.size},{a.size}) + ReLU) float32 "
            f"(tf32 {torch.backends.cuda.matmul.allow_tf32}), {params / 1e9:.3f} B parameters, batch {a.batch} "
            f"per rank, Adam lr {a.lr}, {a.steps} steps")
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times, losses = [], []
    for i in range(a.steps):
        start.record()
        optimizer.zero_grad(set_to_none=True)
        x = torch.randn(a.batch, a.size, device=device)
        y = torch.randn(a.batch, a.size, device=device) * 0.25 + 0.5
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        end.record()
        torch.cuda.synchronize(device)
        times.append(start.elapsed_time(end))
        losses.append(loss.item())
        note = "" if i + 1 >= FIRST_MEASURED_STEP else "  (warm-up, not in the median)"
        say(f"step {i + 1:3d}/{a.steps}  loss {losses[-1]:.6f}  {times[-1]:9.3f} ms{note}")
    measured = times[FIRST_MEASURED_STEP - 1:]
    median = statistics.median(measured) if measured else float("nan")
    gib = float(1 << 30)
    peak = torch.cuda.max_memory_allocated(device) / gib
    free, total = torch.cuda.mem_get_info(device)
    finite = all(math.isfinite(v) for v in losses)
    say(f"median step time over steps {FIRST_MEASURED_STEP}..{a.steps}: {median:.3f} ms; peak "
        f"torch.cuda.max_memory_allocated {peak:.3f} GiB; device used {(total - free) / gib:.3f} GiB")
    result = (f"RESULT impl=fsdp2 mode=fsdp2 rank={rank} ranks={world} layers={a.layers} size={a.size} "
              f"batch={a.batch} steps={a.steps} median_ms={median:.3f} hidden_fraction=na peak_alloc_gib={peak:.3f} "
              f"device_used_gib={(total - free) / gib:.3f} loss_first={losses[0]:.6f} loss_last={losses[-1]:.6f} "
              f"loss_falling={'yes' if losses[-1] < losses[0] else 'no'} torch={torch.__version__}")
    say(result)
    dist.destroy_process_group()
    return 0 if finite else 1


# ---------------------------------------------------------------- the report

RESULT = re.compile(r"RESULT (impl=.*)")


def fields(line):
    """The key=value pairs of a RESULT line."""
    return dict(kv.split("=", 1) for kv in RESULT.search(line).group(1).split() if "=" in kv)


def read_results(directory, side):
    """{round: {rank: fields}} from DIR/<side>-r<round>-rank<rank>.log (the last RESULT line of each)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, f"{side}-r*-rank*.log"))):
        m = re.search(r"-r(\d+)-rank(\d+)\.log$", path)
        if not m:
            continue
        found = None
        with open(path, errors="replace") as f:
            for line in f:
                if RESULT.search(line):
                    found = fields(line)
        if found is not None:
            out.setdefault(int(m.group(1)), {})[int(m.group(2))] = found
    return out


def number(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def summarize(results, np_):
    """Per side: the median over complete rounds of the slowest rank's median step; the largest peak of any rank."""
    steps, peaks, used, hidden, rounds = [], [], [], [], 0
    for rnd in sorted(results):
        ranks = results[rnd]
        if len(ranks) < np_:
            continue
        rounds += 1
        ms = [number(r.get("median_ms")) for r in ranks.values()]
        if all(v is not None for v in ms):
            steps.append(max(ms))
        peaks += [v for v in (number(r.get("peak_alloc_gib")) for r in ranks.values()) if v is not None]
        used += [v for v in (number(r.get("device_used_gib")) for r in ranks.values()) if v is not None]
        hidden += [v for v in (number(r.get("hidden_fraction")) for r in ranks.values()) if v is not None]
    return {
        "rounds": rounds,
        "step_ms": statistics.median(steps) if steps else None,
        "step_ms_rounds": steps,
        "peak_gib": max(peaks) if peaks else None,
        "device_used_gib": max(used) if used else None,
        "hidden_fraction": statistics.median(hidden) if hidden else None,
    }


def fmt(v, digits=3):
    return "n/a" if v is None else f"{v:.{digits}f}"


def report(argv):
    p = argparse.ArgumentParser(description="report of sharded-compare.sh")
    p.add_argument("directory")
    p.add_argument("--np", type=int, required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--config", default="")
    p.add_argument("--baseline", choices=("fsdp2", "ddp"), default="fsdp2",
                   help="fsdp2: PyTorch FSDP2's logs (fsdp2-r*); ddp: nccl4j's own --mode ddp (ddp-r*)")
    a = p.parse_args(argv)
    ours = read_results(a.directory, "nccl4j")
    theirs = read_results(a.directory, a.baseline)
    s, t = summarize(ours, a.np), summarize(theirs, a.np)
    n = a.np
    other = "PyTorch FSDP2" if a.baseline == "fsdp2" else "nccl4j DDP (nothing sharded)"
    short = "FSDP2" if a.baseline == "fsdp2" else "DDP"
    mode = next((r.get("mode") for rnd in ours.values() for r in rnd.values() if r.get("mode")), "zero3")
    print(f"## Sharded training: nccl4j ParameterShards ({mode}) vs {other}, {n} ranks")
    print()
    if a.config:
        print(a.config)
        print()
    print("Step time: median over steps 3..N of each rank, the slowest rank per round, the median over rounds. "
          "Peak: nccl4j's bytes allocated by the rank at the peak"
          + (", torch.cuda.max_memory_allocated" if a.baseline == "fsdp2" else "") + "; the largest rank.")
    print()
    print("| round | rank | implementation | median step (ms) | peak allocated (GiB) | device used (GiB) "
          "| communication hidden | loss first / last |")
    print("|---|---|---|---|---|---|---|---|")
    for name, res in ((f"nccl4j {mode}", ours), (short, theirs)):
        for rnd in sorted(res):
            for rank in sorted(res[rnd]):
                r = res[rnd][rank]
                hid = r.get("hidden_fraction", "na")
                print(f"| {rnd} | {rank} | {name} | {r.get('median_ms', 'n/a')} | {r.get('peak_alloc_gib', 'n/a')} "
                      f"| {r.get('device_used_gib', 'n/a')} | {'n/a' if hid == 'na' else hid} "
                      f"| {r.get('loss_first', '?')} / {r.get('loss_last', '?')} |")
    print()
    print(f"nccl4j: {fmt(s['step_ms'])} ms a step, peak {fmt(s['peak_gib'])} GiB a rank, communication hidden "
          f"{fmt(s['hidden_fraction'])} ({s['rounds']} complete rounds)")
    print(f"{short}: {fmt(t['step_ms'])} ms a step, peak {fmt(t['peak_gib'])} GiB a rank ({t['rounds']} complete "
          "rounds)")
    if s["step_ms"] and t["step_ms"]:
        print(f"step time, nccl4j {mode} / {short}: {s['step_ms'] / t['step_ms']:.3f}")
    if a.baseline == "ddp":
        data = {
            "ranks": n,
            "mode": mode,
            f"{mode}_step_ms_{n}gpu": s["step_ms"],
            f"ddp_step_ms_{n}gpu": t["step_ms"],
            f"{mode}_peak_gib_{n}gpu": s["peak_gib"],
            f"ddp_peak_gib_{n}gpu": t["peak_gib"],
            f"{mode}_step_ms_rounds": s["step_ms_rounds"],
            "ddp_step_ms_rounds": t["step_ms_rounds"],
            "config": a.config,
        }
    else:
        data = {
            "ranks": n,
            f"sharded_step_ms_{n}gpu": s["step_ms"],
            f"fsdp2_step_ms_{n}gpu": t["step_ms"],
            f"sharded_peak_gib_{n}gpu": s["peak_gib"],
            f"fsdp2_peak_gib_{n}gpu": t["peak_gib"],
            f"sharded_device_used_gib_{n}gpu": s["device_used_gib"],
            f"fsdp2_device_used_gib_{n}gpu": t["device_used_gib"],
            f"sharded_hidden_fraction_{n}gpu": s["hidden_fraction"],
            "sharded_step_ms_rounds": s["step_ms_rounds"],
            "fsdp2_step_ms_rounds": t["step_ms_rounds"],
            "config": a.config,
        }
    with open(a.json, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    return 0 if s["rounds"] > 0 and t["rounds"] > 0 else 1

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "report":
        sys.exit(report(sys.argv[2:]))
    sys.exit(train(sys.argv[1:]))
