#!/usr/bin/env python3
"""Sums inside subgroups: all_reduce over all ranks, then in the subgroup [1, 3], then in two
half-groups whose sums are shared with everyone through an all_reduce(MAX) over all ranks.

    /usr/bin/python3 examples/python/subgroup_sums.py --world-size 4
"""
import argparse
import os

import torch

import weft
import weft.distributed as dist


def run(rank, world_size):
    dist.init_process_group(backend="weft")
    n = dist.get_world_size()

    tensor = torch.ones(4)
    dist.all_reduce(tensor)
    assert torch.equal(tensor, torch.full((4,), float(n)))

    sub_ranks = [r for r in (1, 3) if r < n]
    sub_group = dist.new_group(ranks=sub_ranks)  # every rank calls new_group
    if rank in sub_ranks:
        tensor = torch.ones(4)
        dist.all_reduce(tensor, group=sub_group)
        assert torch.equal(tensor, torch.full((4,), float(len(sub_ranks))))
        print(f"[rank {rank}] sub group {sub_ranks} all_reduce: {tensor.tolist()}")
    dist.barrier()

    group_1_sum = torch.tensor([1, 1, 1, 1])
    group_2_sum = torch.tensor([1.5] * 4)
    group_1_ranks = list(range(n // 2))
    group_2_ranks = list(range(n // 2, n))
    group_1 = dist.new_group(ranks=group_1_ranks)
    group_2 = dist.new_group(ranks=group_2_ranks)
    if rank in group_1_ranks:
        dist.all_reduce(group_1_sum, group=group_1)
    else:
        dist.all_reduce(group_2_sum, group=group_2)
    # share both groups' sums with everyone
    dist.all_reduce(group_1_sum, op=dist.ReduceOp.MAX)
    dist.all_reduce(group_2_sum, op=dist.ReduceOp.MAX)
    want_1 = max(len(group_1_ranks), 1)
    want_2 = 1.5 * len(group_2_ranks)
    assert torch.equal(group_1_sum, torch.full((4,), want_1)), group_1_sum
    assert torch.equal(group_2_sum, torch.full((4,), want_2)), group_2_sum
    print(f"[rank {rank}] group_1_sum={group_1_sum.tolist()}, group_2_sum={group_2_sum.tolist()}")
    dist.barrier()
    if rank == 0:
        print(f"OK: subgroup sums on {n} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="all_reduce in subgroups")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    if world_size < 2:
        parser.error("needs --world-size 2 or more")
    weft.launch(run, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
