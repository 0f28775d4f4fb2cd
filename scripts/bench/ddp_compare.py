#!/usr/bin/env python3
"""PyTorch side of the nccl4j DDP comparison: the training loop of GPU MODE lecture 17's ddp_example.py, timed.

Model Linear(4000,4000) -> ReLU -> Linear(4000,4000) -> ReLU -> Linear(4000,4000) (float32, TF32 off),
MSE loss against random labels, SGD lr 0.001, fresh inputs and labels drawn with torch.randn on the GPU every
step, batch 1000 per rank, DistributedDataParallel(bucket_cap_mb=25). Each step is timed with CUDA events
and a synchronize; the median is taken over steps 3..N (1-based), as org.nccl4j.examples.DdpTraining does.

    torchrun --standalone --nproc_per_node=2 scripts/bench/ddp_compare.py      # DDP on 2 GPUs
    python3 -m torch.distributed.run --standalone --nproc_per_node=2 scripts/bench/ddp_compare.py
    python3 scripts/bench/ddp_compare.py --no-ddp                             # one GPU, no communication

Rank 0 prints one line per step and, at the end, one machine-readable line:
    RESULT impl=torch mode=ddp|single ranks=N steps=N median_ms=X loss_first=X loss_last=X ...
"""
import argparse
import math
import os
import statistics
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP

FIRST_MEASURED_STEP = 3


class ToyModel(nn.Module):
    """ddp_example.py's model: net3(relu(net2(relu(net1(x)))))."""

    def __init__(self, size):
        super().__init__()
        self.net1 = nn.Linear(size, size)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(size, size)
        self.net3 = nn.Linear(size, size)

    def forward(self, x):
        return self.net3(self.relu(self.net2(self.relu(self.net1(x)))))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--size", type=int, default=4000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--no-ddp", action="store_true", help="one GPU, no process group, no communication")
    p.add_argument("--gradient-as-bucket-view", action="store_true",
                   help="DDP(gradient_as_bucket_view=True): gradients are views into the buckets, no copy")
    p.add_argument("--trace", default=None,
                   help="export a torch.profiler Chrome trace of steps 3..N to this file ({rank} is replaced);"
                        " profiling slows the steps, so their times are not comparable")
    args = p.parse_args(argv)
    if args.steps < 1 or args.size < 1 or args.batch < 1 or not args.lr > 0 or not args.bucket_cap_mb > 0:
        p.error("--steps, --size, --batch, --lr and --bucket-cap-mb must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    # float32 throughout, no TF32, as nccl4j's cuBLAS default math mode
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    ddp = not args.no_ddp
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    if ddp:
        if "RANK" not in os.environ:
            sys.exit("ddp_compare.py: DDP mode needs a launcher (torchrun --nproc_per_node=N ...); "
                     "use --no-ddp for one GPU")
        dist.init_process_group("nccl", device_id=device)
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    lead = rank == 0

    torch.manual_seed(args.seed)  # the same initial weights on every rank; DDP also broadcasts rank 0's
    model = ToyModel(args.size).to(device)
    if ddp:
        model = DDP(model, device_ids=[local_rank], bucket_cap_mb=args.bucket_cap_mb,
                    gradient_as_bucket_view=args.gradient_as_bucket_view)
    torch.manual_seed(args.seed + 1 + rank)  # different inputs and labels on each rank
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr)

    if lead:
        nccl = "none"
        if ddp:
            v = torch.cuda.nccl.version()
            nccl = ".".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)
        print(f"ddp_compare.py: mode {'ddp' if ddp else 'single'}, {world} rank(s), torch {torch.__version__}, "
              f"CUDA {torch.version.cuda}, NCCL {nccl}, {torch.cuda.get_device_name(device)}, "
              f"tf32 matmul={torch.backends.cuda.matmul.allow_tf32} cudnn={torch.backends.cudnn.allow_tf32}, "
              f"model 3 x Linear({args.size},{args.size}), batch {args.batch} per rank, SGD lr {args.lr}, "
              f"{args.steps} steps" + (f", bucket_cap_mb {args.bucket_cap_mb}" if ddp else ""), flush=True)

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times, losses = [], []
    prof = None
    for i in range(args.steps):
        if args.trace and i == FIRST_MEASURED_STEP - 1:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                      torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        start.record()
        optimizer.zero_grad()
        outputs = model(torch.randn(args.batch, args.size, device=device))
        labels = torch.randn(args.batch, args.size, device=device)
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
        losses.append(loss.item())
        if lead:
            note = "" if i + 1 >= FIRST_MEASURED_STEP else "  (warm-up, not in the median)"
            print(f"step {i + 1:3d}/{args.steps}  loss {losses[-1]:.6f}  {times[-1]:8.3f} ms{note}", flush=True)
    if prof is not None:
        prof.__exit__(None, None, None)
        path = args.trace.replace("{rank}", str(rank))
        prof.export_chrome_trace(path)
        if lead:
            print(f"trace: {path} (profiled: the step times above are not comparable)")

    measured = times[FIRST_MEASURED_STEP - 1:]
    median = statistics.median(measured) if measured else float("nan")
    finite = all(math.isfinite(v) for v in losses)
    if lead:
        print(f"median step time over steps {FIRST_MEASURED_STEP}..{args.steps}: {median:.3f} ms")
        print(f"RESULT impl=torch mode={'ddp' if ddp else 'single'} ranks={world} steps={args.steps} "
              f"median_ms={median:.3f} hidden_fraction=na loss_first={losses[0]:.6f} loss_last={losses[-1]:.6f} "
              f"torch={torch.__version__}", flush=True)
    if ddp:
        dist.destroy_process_group()
    return 0 if finite else 1


if __name__ == "__main__":
    sys.exit(main())
