#!/usr/bin/env python3
"""all_reduce written by hand from send and recv (seed 004), checked against weft's all_reduce.

naive: reduce to rank 0, then broadcast (each a loop of sends/recvs): 2(p-1) messages of m.
ring:  scatter-reduce then all-gather around the ring, chunk by chunk:
       2(p-1) steps of m/p each, cost 2(p-1)(t_s + (m/p) t_w), every rank busy at every step.

    /usr/bin/python3 examples/python/all_reduce_from_p2p.py --world-size 4 [--algorithm ring]
"""
import argparse
import os

import numpy as np

import weft
import weft.distributed as dist


def naive_all_reduce(array):
    rank, size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        incoming = np.empty_like(array)
        for src in range(1, size):
            dist.recv(incoming, src=src)
            array += incoming
        for dst in range(1, size):
            dist.send(array, dst=dst)
    else:
        dist.send(array, dst=0)
        dist.recv(array, src=0)


def ring_all_reduce(array):
    rank, size = dist.get_rank(), dist.get_world_size()
    chunks = np.array_split(array, size)  # views: results land in array
    right, left = (rank + 1) % size, (rank - 1) % size
    # scatter-reduce: after step s, chunk (rank - s - 1) holds s + 2 ranks' contributions
    for step in range(size - 1):
        send_chunk = chunks[(rank - step) % size]
        recv_index = (rank - step - 1) % size
        request = dist.isend(np.ascontiguousarray(send_chunk), dst=right)
        incoming = np.empty_like(chunks[recv_index])
        dist.recv(incoming, src=left)
        chunks[recv_index] += incoming
        request.wait()
    # all-gather: pass the fully reduced chunks around
    for step in range(size - 1):
        send_chunk = chunks[(rank - step + 1) % size]
        recv_index = (rank - step) % size
        request = dist.isend(np.ascontiguousarray(send_chunk), dst=right)
        incoming = np.empty_like(chunks[recv_index])
        dist.recv(incoming, src=left)
        chunks[recv_index][...] = incoming
        request.wait()


def run(rank, world_size, algorithms):
    dist.init_process_group(backend="weft")
    n = dist.get_world_size()
    for name in algorithms:
        fn = naive_all_reduce if name == "naive" else ring_all_reduce
        for length in (n, 10, 1000):
            array = np.arange(length, dtype=np.float64) * (rank + 1)
            expected = np.arange(length, dtype=np.float64) * (rank + 1)
            dist.all_reduce(expected)
            fn(array)
            assert np.array_equal(array, expected), (name, array, expected)
        if rank == 0:
            print(f"OK: {name} all_reduce from send/recv matches all_reduce on {n} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="all_reduce from send and recv")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    parser.add_argument("--algorithm", choices=["naive", "ring", "both"], default="both")
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    algorithms = ["naive", "ring"] if args.algorithm == "both" else [args.algorithm]
    weft.launch(run, args=(world_size, algorithms), nprocs=world_size)


if __name__ == "__main__":
    main()
