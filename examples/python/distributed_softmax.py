#!/usr/bin/env python3
"""Softmax over logits spread across ranks (one per rank): all_reduce(MAX) for a stable shift,
then all_reduce(SUM) of the exponentials. The probabilities must sum to 1 and match the softmax
of all logits computed in one place.

    /usr/bin/python3 examples/python/distributed_softmax.py --world-size 4
"""
import argparse
import os

import numpy as np

import weft
import weft.distributed as dist


def logit_of(rank):
    return np.random.default_rng(rank).uniform(-10.0, 10.0, size=1)


def run(rank, world_size):
    dist.init_process_group(backend="weft")
    n = dist.get_world_size()
    logit = logit_of(rank)

    max_logit = logit.copy()
    dist.all_reduce(max_logit, op=dist.ReduceOp.MAX)
    prob = np.exp(logit - max_logit)
    prob_sum = prob.copy()
    dist.all_reduce(prob_sum, op=dist.ReduceOp.SUM)
    norm_prob = prob / prob_sum
    print(f"[rank {rank}] logit={logit[0]:.3f}, prob={norm_prob[0]:.3f}")

    total = norm_prob.copy()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    assert np.allclose(total, 1.0), total
    everything = np.concatenate([logit_of(r) for r in range(n)])
    reference = np.exp(everything - everything.max()) / np.exp(everything - everything.max()).sum()
    assert np.allclose(norm_prob[0], reference[rank])
    dist.barrier()
    if rank == 0:
        print(f"OK: softmax over {n} ranks sums to 1")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="distributed softmax")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    weft.launch(run, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
