"""torch_overhead.py -- what the torch backend adds to a call: the same small all_reduce
through weft.distributed, through torch.distributed on the "weft" backend, and on gloo.

    python torch_overhead.py [--world-size 2] [--bytes 8] [--iters 20000] [--batches 7]
    python torch_overhead.py --layers      # one rank: what each layer of the torch path adds

Runs with whichever torch the interpreter has (Debian's 1.13 with /usr/bin/python3, 2.x in the
project's .venv). Each rank times batches of back-to-back synchronous float32 SUM all_reduces;
a batch's time is its slowest rank's, and the median batch is reported in microseconds per call.
Needs the build's python directory on PYTHONPATH.
"""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as tdist

import weft
import weft.distributed as wdist
import weft.torch  # noqa: F401  (registers the backend "weft")


def _batches(call, iters, batches, barrier):
    results = []
    for _ in range(batches):
        barrier()
        start = time.perf_counter()
        for _ in range(iters):
            call()
        results.append((time.perf_counter() - start) / iters * 1e6)
    return results


def _slowest(times, reduce_max):
    t = torch.tensor(times, dtype=torch.float64)
    reduce_max(t)
    return statistics.median(t.tolist())


def worker(rank, world_size, args):
    torch.set_num_threads(1)
    count = max(1, args.bytes // 4)
    tensor = torch.ones(count)
    report = {}

    wdist.init_process_group("weft")
    wmax = lambda t: wdist.all_reduce(t, op=wdist.ReduceOp.MAX)  # noqa: E731
    for _ in range(args.iters // 10):
        wdist.all_reduce(tensor)
    report["weft.distributed"] = _slowest(
        _batches(lambda: wdist.all_reduce(tensor), args.iters, args.batches, wdist.barrier), wmax)
    wdist.destroy_process_group()

    for backend in args.backends.split(","):
        os.environ["MASTER_PORT"] = str(int(os.environ["MASTER_PORT"]) + 1)
        tdist.init_process_group(backend, rank=rank, world_size=world_size)
        tmax = lambda t: tdist.all_reduce(t, op=tdist.ReduceOp.MAX)  # noqa: E731
        iters = args.iters if backend == "weft" else max(100, args.iters // 20)
        for _ in range(iters // 10):
            tdist.all_reduce(tensor)
        report[f"torch.distributed ({backend})"] = _slowest(
            _batches(lambda: tdist.all_reduce(tensor), iters, args.batches, tdist.barrier), tmax)
        tdist.destroy_process_group()

    if rank == 0:
        print(f"torch {torch.__version__}, {world_size} ranks, all_reduce of {count * 4} B "
              f"(float32 SUM), median of {args.batches} batches, us per call")
        for name, us in report.items():
            print(f"  {name:32s} {us:9.2f}")
        base = report["weft.distributed"]
        weft_torch = report.get("torch.distributed (weft)")
        if weft_torch is not None:
            print(f"  torch's layer adds {weft_torch - base:.2f} us to weft.distributed's call")


def layers(args):
    """One rank, so that no peer's pace enters: the same all_reduce through each layer of the
    torch path in turn, best of several batches, in microseconds per call."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "29613"),
                      RANK="0", WORLD_SIZE="1")
    torch.set_num_threads(1)
    tensor = torch.ones(max(1, args.bytes // 4))

    def best(call):
        for _ in range(args.iters // 10):
            call()
        return min(_batches(call, args.iters, args.batches, lambda: None))

    tdist.init_process_group("weft")
    group = tdist.distributed_c10d._get_default_group()
    opts = tdist.AllreduceOptions()
    rows = []
    if hasattr(opts, "asyncOp"):  # torch 2.x: the Python group over weft._weft
        opts.asyncOp = False
        weft_group = group.weft_group
        op = weft._weft.ReduceOp("SUM")
        rows.append(("weft._weft binding (blocking call)",
                     best(lambda: weft_group.all_reduce(tensor, op, False))))
        rows.append(("+ the group's allreduce method", best(lambda: group.allreduce([tensor], opts))))
    else:  # torch 1.13: the compiled c10d::ProcessGroup, a Work per call
        rows.append(("c10d ProcessGroup.allreduce + wait()",
                     best(lambda: group.allreduce([tensor], opts).wait())))
    rows.append(("+ torch.distributed.all_reduce", best(lambda: tdist.all_reduce(tensor))))
    tdist.destroy_process_group()
    print(f"torch {torch.__version__}, 1 rank, all_reduce of {tensor.numel() * 4} B, best of "
          f"{args.batches} batches of {args.iters}, us per call")
    for name, us in rows:
        print(f"  {name:40s} {us:7.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--bytes", type=int, default=8)
    parser.add_argument("--iters", type=int, default=20000)
    parser.add_argument("--batches", type=int, default=7)
    parser.add_argument("--backends", default="weft,gloo")
    parser.add_argument("--layers", action="store_true",
                        help="one rank: the cost each layer of the torch path adds")
    args = parser.parse_args()
    if args.layers:
        layers(args)
        return
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    weft.spawn(worker, args=(args.world_size, args), nprocs=args.world_size, timeout=600)


if __name__ == "__main__":
    main()
