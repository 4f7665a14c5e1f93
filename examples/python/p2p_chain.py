#!/usr/bin/env python3
"""A point-to-point chain 0 -> 1 -> 2: rank 0 sends [100, 200], rank 1 adds 100 and passes it
on, first with blocking send/recv, then with isend/irecv and wait() while "other work" runs.
Ranks past 2 keep zeros. Needs at least 3 ranks.

    /usr/bin/python3 examples/python/p2p_chain.py --world-size 4
"""
import argparse
import os
import time

import torch

import weft
import weft.distributed as dist


def other_work():
    time.sleep(0.05)


def chain(rank, world_size):
    dist.init_process_group(backend="weft")
    expected = {0: [100.0, 200.0], 1: [200.0, 300.0], 2: [200.0, 300.0]}

    # blocking
    tensor = torch.tensor([100.0, 200.0]) if rank == 0 else torch.zeros(2)
    if rank == 0:
        dist.send(tensor, dst=1)
    elif rank == 1:
        dist.recv(tensor, src=0)
        tensor += 100
        dist.send(tensor, dst=2)
    elif rank == 2:
        dist.recv(tensor, src=1)
    assert tensor.tolist() == expected.get(rank, [0.0, 0.0]), tensor
    dist.barrier()
    print(f"[rank {rank}] blocking chain: {tensor.tolist()}")

    # non-blocking: do other work, then wait() before touching the tensor
    tensor = torch.tensor([100.0, 200.0]) if rank == 0 else torch.zeros(2)
    if rank == 0:
        request = dist.isend(tensor, dst=1)
        other_work()
        request.wait()
    elif rank == 1:
        request = dist.irecv(tensor, src=0)
        other_work()
        request.wait()
        tensor += 100
        request = dist.isend(tensor, dst=2)
        other_work()
        request.wait()
    elif rank == 2:
        request = dist.irecv(tensor, src=1)
        other_work()
        request.wait()
    assert tensor.tolist() == expected.get(rank, [0.0, 0.0]), tensor
    print(f"[rank {rank}] async chain: {tensor.tolist()}")
    dist.barrier()
    if rank == 0:
        print(f"OK: p2p chain on {world_size} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="p2p chain, blocking and async")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    if world_size < 3:
        parser.error("the chain 0 -> 1 -> 2 needs --world-size 3 or more")
    weft.launch(chain, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
