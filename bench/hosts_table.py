#!/usr/bin/env python3
"""hosts_table.py — tables runs of the anchors' netns/netns_bench.sh (weft beside Open MPI
across simulated hosts): Open MPI's time over weft's for each collective and size, the median
over the runs with their range in brackets (above 1: weft faster), as in docs/PERFORMANCE.md,
"Across hosts".

    bench/hosts_table.py [-n RANKS] [-c CONFIG] [-s SIZES] [--busbw] RUN_DIR...

  -n       ranks of the runs (the harness's -n; default 2): reads netns_<system>_n<RANKS>.csv
  -c       the runs' config column, netns-<rate> (default netns-none; netns-10gbit, ...)
  -s       sizes in bytes, comma-separated (default 8,64,1024,65536,1048576,16777216,67108864);
           a size one system rounds up (Open MPI's smallest all_gather of 4 ranks is 16 B)
           falls back to the next size both have
  --busbw  from 1 MiB up, add [weft's busbw / Open MPI's] in GB/s, medians over the runs
"""
import argparse
import csv
import statistics
import sys
from pathlib import Path

OPS = [("allreduce", "all_reduce"), ("broadcast", "broadcast"), ("allgather", "all_gather"),
       ("reduce_scatter", "reduce_scatter"), ("alltoall", "all_to_all")]


def load(path, config):
    """(op, bytes) -> (time_us, busbw_GBps) for the rows of `config`."""
    rows = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["config"] == config:
                rows[(row["op"], int(row["bytes"]))] = (float(row["time_us"]),
                                                        float(row["busbw_GBps"]))
    return rows


def size_label(size):
    if size >= 1 << 20:
        return f"{size >> 20} MiB"
    return f"{size >> 10} KiB" if size >= 1024 else f"{size} B"


def cell(runs, op, size, busbw):
    """The cell of (op, size), or of the next size every run of both systems has."""
    sizes = sorted({s for weft, mpi in runs for (o, s) in weft if o == op and (o, s) in mpi})
    size = next((s for s in sizes if s >= size), None)
    if size is None:
        return "-"
    pairs = [(weft[(op, size)], mpi[(op, size)]) for weft, mpi in runs
             if (op, size) in weft and (op, size) in mpi]
    ratios = sorted(m[0] / w[0] for w, m in pairs)
    text = f"{statistics.median(ratios):.2f}"
    if len(ratios) > 1:
        text += f" ({ratios[0]:.2f}-{ratios[-1]:.2f})"
    if busbw and size >= 1 << 20:
        text += (f" [{statistics.median(w[1] for w, _ in pairs):.2f} / "
                 f"{statistics.median(m[1] for _, m in pairs):.2f}]")
    return text


def main():
    parser = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("-c", default="netns-none")
    parser.add_argument("-s", default="8,64,1024,65536,1048576,16777216,67108864")
    parser.add_argument("--busbw", action="store_true")
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    sizes = [int(s) for s in args.s.split(",")]
    runs = []
    for run in args.runs:
        weft = Path(run) / f"netns_weft_n{args.n}.csv"
        mpi = Path(run) / f"netns_openmpi_n{args.n}.csv"
        if not weft.exists() or not mpi.exists():
            sys.exit(f"hosts_table.py: {run} has no {weft.name} and {mpi.name}")
        runs.append((load(weft, args.c), load(mpi, args.c)))
    print(f"| {args.c}, {args.n} hosts | " + " | ".join(size_label(s) for s in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    for op, name in OPS:
        print(f"| {name} | " + " | ".join(cell(runs, op, s, args.busbw) for s in sizes) + " |")


if __name__ == "__main__":
    main()
