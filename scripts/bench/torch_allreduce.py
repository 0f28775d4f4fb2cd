#!/usr/bin/env python3
"""torch.distributed all_reduce timed as nccl4j-perf times it, for a side-by-side row in the perf report.

One process per GPU (torchrun, or mpirun with OMPI_COMM_WORLD_* variables; MASTER_ADDR/MASTER_PORT default
to 127.0.0.1:29512). For each size: a float32 tensor of size/4 elements, `warmup` in-place all_reduces
(sum) and a synchronize, a barrier, then a CUDA event, `iters` all_reduces (`--large-iters` from `--large-from` bytes up), a second event; the time is the
events' elapsed time over iters, averaged over ranks (nccl4j-perf's -a 1). Repeats the whole ladder
`--repeats` times. Rank 0 prints nccl-tests-style lines and writes JSON in nccl4j-perf's -J shape (one record
per size and repeat, placement in-place, since torch's all_reduce is in place).

  torchrun --nproc_per_node 2 scripts/bench/torch_allreduce.py --sizes 8,16,...,65536 --iters 1000 --repeats 5 -J out.json
"""
import argparse
import datetime
import json
import os
import socket
import time

import torch
import torch.distributed as dist


def env_int(*names, default=None):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            return int(v)
    return default


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default=",".join(str(8 << k) for k in range(14)),
                   help="comma-separated sizes in bytes (default 8..64K, doubling)")
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--large-iters", type=int, default=20, help="iterations for sizes of --large-from bytes and up")
    p.add_argument("--large-from", type=int, default=1 << 20)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("-J", "--output_file", default=None)
    a = p.parse_args()

    rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", default=0)
    world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", default=1)
    local = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", default=0)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29512")
    torch.cuda.set_device(local)
    torch.zeros(1, device="cuda")  # the CUDA context exists before the measured init
    t0 = time.perf_counter()
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", local))
    dist.barrier()
    init_ms = (time.perf_counter() - t0) * 1e3
    sizes = [int(s) for s in a.sizes.split(",") if s]
    n = world
    buf = torch.zeros(max(sizes) // 4 + 1, dtype=torch.float32, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    results = []
    if rank == 0:
        print(f"# torch {torch.__version__} NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, {n} ranks, "
              f"init {init_ms:.1f} ms", flush=True)
        print("#       size         count      type   redop    root     time   algbw   busbw  repeat", flush=True)
    for rep in range(a.repeats):
        for size in sizes:
            count = size // 4
            iters = a.iters if size < a.large_from else a.large_iters
            t = buf[:count]
            for _ in range(a.warmup):
                dist.all_reduce(t)
            torch.cuda.synchronize()
            dist.barrier()
            start.record()
            for _ in range(iters):
                dist.all_reduce(t)
            stop.record()
            stop.synchronize()
            us = start.elapsed_time(stop) * 1000.0 / iters
            tt = torch.tensor([us], dtype=torch.float64, device="cuda")
            dist.all_reduce(tt)
            us = tt.item() / n
            algbw = count * 4 / (us * 1e-6) / 1e9 if us > 0 else 0.0
            busbw = algbw * 2 * (n - 1) / n
            if rank == 0:
                print(f"{count * 4:12d}  {count:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}  {us:7.2f}  {algbw:6.2f}  "
                      f"{busbw:6.2f}  {rep:6d}", flush=True)
            results.append({"op": "all_reduce", "size": count * 4, "count": count, "type": "float", "redop": "sum",
                            "root": -1, "placement": "in-place", "graph": False, "time_us": us, "algbw": algbw,
                            "busbw": busbw, "wrong": None, "repeat": rep})
    if rank == 0 and a.output_file:
        doc = {"tool": "torch.distributed", "tool_version": torch.__version__,
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "hostname": socket.gethostname(), "nccl_version": ".".join(map(str, torch.cuda.nccl.version())),
               "ranks": n, "processes": n, "gpus_per_process": 1, "mode": "process-per-gpu", "init_ms": init_ms,
               "config": {"iters": a.iters, "warmup_iters": a.warmup, "repeats": a.repeats}, "results": results}
        with open(a.output_file, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"# Wrote JSON output to {a.output_file}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
