#!/usr/bin/env python3
"""all_gather of strings: each rank encodes its text as int32 codes in a fixed-size array, all
ranks gather all arrays and decode them. Then the same with all_gather_object (any picklable
object, no fixed size needed), and an uneven all_gather of the raw bytes (weft accepts a
different size per rank, torch's gloo does not).

    /usr/bin/python3 examples/python/all_gather_strings.py --world-size 4
"""
import argparse
import os

import numpy as np

import weft
import weft.distributed as dist


def info(rank):
    return f"Process {rank} Information..." + "!" * rank


def run(rank, world_size):
    dist.init_process_group(backend="weft")
    world_size = dist.get_world_size()
    max_len = 100
    encoded = np.zeros(max_len, dtype=np.int32)
    raw = info(rank).encode("utf-8")
    encoded[:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    gathered = [np.zeros(max_len, dtype=np.int32) for _ in range(world_size)]
    dist.all_gather(gathered, encoded)
    texts = [g.astype(np.uint8).tobytes().decode("utf-8").strip("\x00") for g in gathered]
    assert texts == [info(r) for r in range(world_size)], texts
    if rank == 0:
        print("\n".join(texts))

    objects = [None] * world_size
    dist.all_gather_object(objects, info(rank))
    assert objects == texts

    # uneven: exactly len(bytes) per rank; sizes exchanged first
    sizes = np.zeros(world_size, dtype=np.int64)
    dist.all_gather_into_tensor(sizes, np.array([len(raw)], dtype=np.int64))
    pieces = [np.zeros(int(s), dtype=np.uint8) for s in sizes]
    dist.all_gather(pieces, np.frombuffer(raw, dtype=np.uint8))
    assert [p.tobytes().decode() for p in pieces] == texts
    dist.barrier()
    if rank == 0:
        print(f"OK: strings gathered from {world_size} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="all_gather of strings")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    weft.launch(run, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
