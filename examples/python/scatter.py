#!/usr/bin/env python3
"""scatter from rank 0: rank 0 holds one block per rank (scatter_list), the others pass None
and receive their own block only.

    /usr/bin/python3 examples/python/scatter.py --world-size 4
"""
import argparse
import os

import numpy as np

import weft
import weft.distributed as dist


def run(rank, world_size):
    dist.init_process_group(backend="weft")
    n = dist.get_world_size()
    output = np.zeros(2, dtype=np.float32)
    scatter_list = [np.ones(2, dtype=np.float32) * i for i in range(n)] if rank == 0 else None
    dist.scatter(output, scatter_list, src=0)
    assert output.tolist() == [float(rank)] * 2, output
    print(f"[rank {rank}] output={output}")
    dist.barrier()
    if rank == 0:
        print(f"OK: scatter to {n} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="scatter from rank 0")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    weft.launch(run, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
