#!/usr/bin/env python3
"""broadcast from two sources: tensor_1 from rank 0, tensor_2 from rank 1, into memory every
rank allocated beforehand (the data lands in place).

    /usr/bin/python3 examples/python/broadcast.py --world-size 4
"""
import argparse
import os

import numpy as np

import weft
import weft.distributed as dist


def run(rank, world_size):
    dist.init_process_group(backend="weft")
    n = dist.get_world_size()
    tensor_1 = np.array([1.0, 2.0, 3.0], np.float32) if rank == 0 else np.zeros(3, np.float32)
    tensor_2 = np.array([4.0, 5.0], np.float32) if rank == 1 else np.zeros(2, np.float32)
    address = tensor_1.ctypes.data
    dist.broadcast(tensor_1, src=0)
    src_2 = 1 if n > 1 else 0
    if n == 1:
        tensor_2[:] = [4.0, 5.0]
    dist.broadcast(tensor_2, src=src_2)
    assert tensor_1.ctypes.data == address  # in place
    assert tensor_1.tolist() == [1.0, 2.0, 3.0] and tensor_2.tolist() == [4.0, 5.0]
    print(f"[rank {rank}] tensor_1={tensor_1}, tensor_2={tensor_2}")
    dist.barrier()
    if rank == 0:
        print(f"OK: broadcast from src 0 and {src_2} on {n} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="broadcast from src 0 and src 1")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    weft.launch(run, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
