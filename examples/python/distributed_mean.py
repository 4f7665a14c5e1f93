#!/usr/bin/env python3
"""Global mean with all_reduce: (1) all_reduce(SUM) / world_size for equal local sizes, (2) a
weighted mean for unequal sizes (all_reduce of the sum and of the count), then the gradient
averaging that DDP does. Checks every result against the mean computed from all ranks' data.

    /usr/bin/python3 examples/python/distributed_mean.py --world-size 4 --data-size 100
    weftrun -n 4 /usr/bin/python3 examples/python/distributed_mean.py
"""
import argparse
import os

import torch

import weft
import weft.distributed as dist


def local_data(rank, size, seed):
    generator = torch.Generator().manual_seed(seed + rank)
    return torch.randn(size, generator=generator, dtype=torch.float64) + rank


def mean_worker(rank, world_size, data_size, backend):
    dist.init_process_group(backend=backend)
    world_size = dist.get_world_size()

    # 1. equal sizes: all_reduce(SUM) / world_size
    data = local_data(rank, data_size, 42)
    total = data.clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    mean = total / world_size
    expected = sum(local_data(r, data_size, 42) for r in range(world_size)) / world_size
    assert torch.allclose(mean, expected), "simple mean differs"
    dist.barrier()
    print(f"[rank {rank}] local mean {data.mean().item():.4f}, distributed mean "
          f"{mean.mean().item():.4f}")

    # 2. unequal sizes: weighted by the local counts
    sizes = ([data_size, data_size, data_size, data_size // 2] * world_size)[:world_size]
    data = local_data(rank, sizes[rank], 7)
    local_sum = data.sum()
    dist.all_reduce(local_sum, op=dist.ReduceOp.SUM)
    count = torch.tensor([float(sizes[rank])], dtype=torch.float64)
    dist.all_reduce(count, op=dist.ReduceOp.SUM)
    weighted = local_sum / count
    everything = torch.cat([local_data(r, sizes[r], 7) for r in range(world_size)])
    assert torch.allclose(weighted, everything.mean()), "weighted mean differs"
    print(f"[rank {rank}] size {sizes[rank]}, weighted global mean {weighted.item():.4f}")

    # 3. gradient averaging, as DDP does after backward(); AVG does the division in weft
    gradient = local_data(rank, 10, 123)
    averaged = gradient.clone()
    dist.all_reduce(gradient, op=dist.ReduceOp.SUM)
    gradient /= world_size
    dist.all_reduce(averaged, op=dist.ReduceOp.AVG)
    assert torch.allclose(gradient, averaged)
    gathered = [torch.zeros(10, dtype=torch.float64) for _ in range(world_size)]
    dist.all_gather(gathered, gradient)
    assert all(torch.equal(gathered[0], g) for g in gathered), "ranks disagree after sync"
    dist.barrier()
    if rank == 0:
        print(f"OK: distributed mean on {world_size} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="Distributed mean computation")
    parser.add_argument("--data-size", "-d", type=int, default=100)
    parser.add_argument("--world-size", "-w", type=int, default=4)
    parser.add_argument("--backend", "-b", default="weft", choices=["weft", "gloo"],
                        help="gloo is accepted as a synonym of weft")
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    weft.launch(mean_worker, args=(world_size, args.data_size, args.backend), nprocs=world_size)


if __name__ == "__main__":
    main()
