"""DistributedDataParallel on weft: a small MLP learns scikit-learn's digits.

    python3 ddp_digits.py --world-size 4            # 4 local ranks, backend "weft"
    python3 ddp_digits.py --world-size 2 --backend gloo
    python3 ddp_digits.py --world-size 2 --comm-hook allreduce   # DDP with a communication hook
    python3 ddp_digits.py --world-size 2 --wrap fsdp             # FSDP2's fully_shard (torch >= 2.6)

Every world size trains on the same global batches (--batch-size, split evenly across the
ranks) from the same initial weights, so DDP's averaged gradients equal the single-process
gradients up to rounding, and 1, 2 and 4 ranks reach the same test accuracy. The only weft
specific line is `import weft.torch`, which registers the backend "weft"; the rest is plain
torch (torch.distributed, DistributedDataParallel); weft.launch starts the ranks (or
runs this one under weftrun/torchrun).

Needs python3-sklearn (Debian) for the data set. --json FILE writes rank 0's results.
"""

import argparse
import gc
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import weft
import weft.torch  # noqa: F401  (registers the backend "weft" with torch.distributed)


def load_data(seed=0):
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    x, y = x[perm], y[perm]
    n_test = len(x) // 5
    return (x[n_test:], y[n_test:]), (x[:n_test], y[:n_test])


def make_model(hidden=64):
    torch.manual_seed(0)  # the same weights everywhere (DDP broadcasts rank 0's anyway)
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def wrap(model, args):
    """DDP (with an optional communication hook) or FSDP2's fully_shard, on the default group."""
    if args.wrap == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        return fully_shard(model, mesh=mesh)
    model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    if args.comm_hook == "allreduce":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.allreduce_hook)
    elif args.comm_hook == "python":
        model.register_comm_hook(None, _averaging_hook)
    return model


def _averaging_hook(state, bucket):
    """A communication hook written in Python: average the bucket with an async all_reduce and
    divide in the future's callback."""
    world_size = dist.get_world_size()
    future = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
    return future.then(lambda f: f.value()[0].div_(world_size))


def full_tensor(parameter):
    """The whole parameter (FSDP shards it across the ranks as a DTensor)."""
    return parameter.full_tensor() if hasattr(parameter, "full_tensor") else parameter


def worker(rank, world_size, args, result_path):
    torch.set_num_threads(1)
    # env://: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come from weft.spawn or weftrun.
    dist.init_process_group(args.backend)
    (x_train, y_train), (x_test, y_test) = load_data()
    model = wrap(make_model(args.hidden), args)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    local = args.batch_size // world_size
    steps = len(x_train) // args.batch_size
    losses, step_times = [], []
    for epoch in range(args.epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch))
        epoch_loss = 0.0
        for step in range(steps):
            batch = order[step * args.batch_size:(step + 1) * args.batch_size]
            mine = batch[rank * local:(rank + 1) * local]  # this rank's share of the batch
            start = time.perf_counter()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train[mine]), y_train[mine])
            loss.backward()  # DDP averages the gradients over the ranks here
            optimizer.step()
            step_times.append(time.perf_counter() - start)
            epoch_loss += loss.item()
        # The mean loss over every rank, for the log.
        total = torch.tensor([epoch_loss / steps])
        dist.all_reduce(total)
        losses.append(total.item() / world_size)
        if rank == 0 and not args.quiet:
            print(f"epoch {epoch:2d}  loss {losses[-1]:.4f}", flush=True)

    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    # Every rank holds the same parameters.
    flat = torch.cat([full_tensor(p).detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    identical = all(torch.equal(g, gathered[0]) for g in gathered)
    if rank == 0:
        result = {"backend": args.backend, "world_size": world_size, "wrap": args.wrap,
                  "comm_hook": args.comm_hook, "accuracy": accuracy,
                  "losses": losses, "identical_parameters": identical,
                  "median_step_ms": 1000 * float(np.median(step_times))}
        print(f"{world_size} rank(s) on {args.backend}: test accuracy {accuracy:.4f}, "
              f"parameters identical on every rank: {identical}, "
              f"median step {result['median_step_ms']:.2f} ms", flush=True)
        if identical and accuracy >= 0.9:
            print(f"OK: {args.wrap.upper()} over {args.backend} on {world_size} rank(s) reached "
                  f"{accuracy:.1%} test accuracy", flush=True)
        if result_path:
            with open(result_path, "w") as f:
                json.dump(result, f)
    # The model holds the process group: drop it first, so that destroying the group ends the
    # backend's threads now. torch's gloo otherwise finishes a work item on its own thread
    # while Python shuts down, and that aborts the process.
    del model, optimizer
    gc.collect()
    dist.destroy_process_group()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--backend", default="weft")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=64,
                        help="hidden layer width (larger: a step-time benchmark)")
    parser.add_argument("--bucket-cap-mb", type=float, default=0.01,
                        help="small buckets: several all_reduce per step, overlapped")
    parser.add_argument("--wrap", choices=["ddp", "fsdp"], default="ddp",
                        help="DistributedDataParallel, or FSDP2's fully_shard (torch >= 2.6)")
    parser.add_argument("--comm-hook", choices=["none", "allreduce", "python"], default="none",
                        help="DDP communication hook: torch's allreduce_hook, or one in Python")
    parser.add_argument("--json", default=None, help="write rank 0's results here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    world_size = int(os.environ["WORLD_SIZE"]) if weft.launched_by_launcher() else args.world_size
    if args.batch_size % world_size:
        parser.error("--batch-size must divide by the world size")
    weft.launch(worker, args=(world_size, args, args.json), nprocs=world_size)


if __name__ == "__main__":
    main()
