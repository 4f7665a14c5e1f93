#!/usr/bin/env python3
"""DistributedDataParallel on the weft backend that loses a rank mid-epoch and finishes with
the others.

    python3 examples/python/train_ddp_recovery.py --world-size 4            # torch 2.x
    /usr/bin/python3 examples/python/train_ddp_recovery.py --world-size 4   # Debian's 1.13
    weftrun -n 4 python3 examples/python/train_ddp_recovery.py [--replace]

A model wrapped in torch's DistributedDataParallel trains on one global batch per step, split
across the ranks; DDP averages the ranks' gradients in its backward pass. At --kill-step, rank
--victim exits on the spot, as a crash would. The survivors' backward of that step fails (DDP's
all_reduce names the dead rank); each calls weft.torch.survivors(), which agrees with the other
survivors on who is left, then destroys torch's process group and initialises a new one on the
survivors over the job's store (which rank 0 serves and so outlived the victim), wraps the
model in a new DDP, splits the same global batch among fewer ranks and redoes the step. With
--replace, rank 0 starts a new process in the lost rank's place instead: the survivors keep
their ranks, the newcomer joins their new group through the store, gets the parameters from
rank 0 (DDP broadcasts them when it wraps a model) and the step from the store, and the job
finishes with as many ranks as it started with.

Each rank's loss is scaled so that DDP's average of the parts is the gradient of the whole
batch: the ranks end with the parameters one process gets training on the same batches, and
they check it (and that they all hold the same parameters) before rank 0 prints OK.
"""
import argparse
import datetime
import multiprocessing
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

import weft
import weft.torch  # registers the backend "weft"

FEATURES = 8


def make_data(samples, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, FEATURES, generator=generator, dtype=torch.float64)
    w = torch.randn(FEATURES, 1, generator=generator, dtype=torch.float64)
    y = torch.tanh(x @ w) + 0.05 * torch.randn(samples, 1, generator=generator,
                                                dtype=torch.float64)
    return x, y


def make_model():
    torch.manual_seed(0)  # the same initial weights on every rank
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, 1)).double()


def batches(x, args):
    """The global batches of every epoch, as index tensors: the same on every rank."""
    for epoch in range(args.epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        for step in range(len(x) // args.batch_size):
            yield epoch, step, order[step * args.batch_size:(step + 1) * args.batch_size]


def train_step(ddp, optimizer, x, y, batch, batch_size):
    """One step of this rank's share of the global batch. Its loss is the share's part of the
    batch loss times the world size: DDP divides the sum of the ranks' gradients by the world
    size, which leaves the gradient of the whole batch."""
    size, rank = dist.get_world_size(), dist.get_rank()
    mine = batch.tensor_split(size)[rank]
    optimizer.zero_grad()
    loss = ((ddp(x[mine]) - y[mine]) ** 2).sum() * size / batch_size
    loss.backward()  # DDP's all_reduce of the gradients: where a lost rank is noticed
    optimizer.step()


def reference_parameters(x, y, args):
    """What one process gets training on the whole of every global batch."""
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for _, _, batch in batches(x, args):
        optimizer.zero_grad()
        (((model(x[batch]) - y[batch]) ** 2).sum() / args.batch_size).backward()
        optimizer.step()
    return flat_parameters(model)


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def job_store(rank, timeout):
    """The job's store, served by rank 0 (MASTER_ADDR:MASTER_PORT, which weft.spawn and weftrun
    leave to the program): every group of the job, and a replacement rank, meet through it."""
    return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                         is_master=rank == 0, timeout=timeout, wait_for_workers=False)


def join_group(store, generation, rank, world_size, timeout):
    # A prefix per generation: a group's rendezvous keys must not meet an older group's.
    dist.init_process_group("weft", store=dist.PrefixStore(f"generation{generation}", store),
                            rank=rank, world_size=world_size, timeout=timeout)


def recover(store, generation, world_size, args, timeout):
    """The survivors agree on who is left and start the next generation's group: of themselves,
    renumbered in the old order, or (--replace) of themselves with their old ranks and a new
    process in each lost rank's place. Returns the ranks alive before the new group."""
    alive = weft.torch.survivors()
    old_rank = dist.get_rank()
    dist.destroy_process_group()
    if not args.replace:
        join_group(store, generation, alive.index(old_rank), len(alive), timeout)
        return alive, []
    replacements = []
    if old_rank == 0:  # rank 0 always survives: it serves the store
        for lost in sorted(set(range(world_size)) - set(alive)):
            print(f"starting a replacement for rank {lost}", flush=True)
            process = multiprocessing.get_context("spawn").Process(
                target=replacement, args=(lost, generation, world_size, args))
            process.start()
            replacements.append(process)
    join_group(store, generation, old_rank, world_size, timeout)
    return alive, replacements


def train(rank, world_size, args, store, model, ddp, start_step=0, generation=0):
    """Trains from global step start_step on, recovering from a lost rank, then checks the
    parameters (and waits for the replacement processes this rank started)."""
    timeout = datetime.timedelta(seconds=args.timeout)
    x, y = make_data(args.samples)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    replacements = []
    for global_step, (epoch, step, batch) in enumerate(batches(x, args)):
        if global_step < start_step:
            continue
        if rank == args.victim and global_step == args.kill_step and generation == 0:
            print(f"[rank {rank}] exiting mid-epoch (epoch {epoch}, step {step})", flush=True)
            os._exit(0)  # as a crash: no destructor, no goodbye to the peers
        while True:
            before = flat_parameters(model)
            try:
                train_step(ddp, optimizer, x, y, batch, args.batch_size)
                break
            except RuntimeError as error:
                # No survivor stepped: every all_reduce of the step needs every rank.
                assert torch.equal(before, flat_parameters(model))
                generation += 1
                alive, started = recover(store, generation, world_size, args, timeout)
                replacements += started
                if dist.get_rank() == 0:
                    # A replacement learns where the others are from rank 0.
                    store.set(f"generation{generation}/step", str(global_step))
                ddp = DistributedDataParallel(model)  # rank 0's parameters reach a newcomer
                if dist.get_rank() == 0:
                    print(f"epoch {epoch} step {step}: {str(error).splitlines()[0][:120]}",
                          flush=True)
                    print(f"continuing with ranks {alive} of the {world_size}" +
                          (" and a replacement for each lost one" if args.replace else ""),
                          flush=True)
    check_and_finish(rank, world_size, args, model, x, y)
    for process in replacements:
        process.join(timeout=args.timeout)
        if process.exitcode != 0:
            raise SystemExit(f"a replacement rank failed (exit code {process.exitcode})")


def check_and_finish(rank, world_size, args, model, x, y):
    mine = flat_parameters(model)
    everyone = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    identical = all(torch.equal(part, mine) for part in everyone)
    matches = torch.allclose(mine, reference_parameters(x, y, args), rtol=1e-9, atol=1e-12)
    if not (identical and matches):
        raise SystemExit(f"rank {rank}: FAILED: parameters identical on every rank: "
                         f"{identical}; equal to one process's training: {matches}")
    if dist.get_rank() == 0:
        loss = (((model(x) - y) ** 2).mean()).item()
        how = "with a replacement for" if args.replace else "after losing"
        print(f"OK: {dist.get_world_size()} of {world_size} ranks finished {args.epochs} epochs "
              f"with DDP {how} rank {args.victim}; parameters identical and equal to a "
              f"single process's (loss {loss:.4f})", flush=True)
    dist.barrier()  # rank 0 serves the store: the others leave first
    dist.destroy_process_group()


def worker(rank, world_size, args):
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=args.timeout)
    store = job_store(rank, timeout)  # outlives every group
    join_group(store, 0, rank, world_size, timeout)
    model = make_model()
    train(rank, world_size, args, store, model, DistributedDataParallel(model))


def replacement(rank, generation, world_size, args):
    """A new process in lost rank `rank`'s place: it joins the survivors' new group, receives
    the parameters from rank 0 (DDP does that when it wraps a model) and the step to go on from
    (the store), and trains on with them."""
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=args.timeout)
    store = job_store(rank, timeout)
    join_group(store, generation, rank, world_size, timeout)
    print(f"[rank {rank}] replacement joined generation {generation}", flush=True)
    model = make_model()
    ddp = DistributedDataParallel(model)
    step = int(store.get(f"generation{generation}/step"))
    train(rank, world_size, args, store, model, ddp, start_step=step, generation=generation)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--victim", type=int, default=None,
                        help="the rank that exits (default: world size // 2; never 0, whose "
                             "process serves the store)")
    parser.add_argument("--kill-step", type=int, default=17,
                        help="the global step before which the victim exits (17: mid-epoch 1)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=576)
    parser.add_argument("--batch-size", type=int, default=48, help="global batch size")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds the group waits for a peer")
    parser.add_argument("--replace", action="store_true",
                        help="start a new process in the lost rank's place instead of going on "
                             "with fewer ranks")
    args = parser.parse_args(argv)
    world_size = int(os.environ["WORLD_SIZE"]) if weft.launched_by_launcher() else args.world_size
    if world_size < 2:
        parser.error("needs 2 ranks or more: one of them is lost")
    if args.victim is None:
        args.victim = world_size // 2
    if not 0 < args.victim < world_size:
        parser.error("--victim must be a rank other than 0")
    weft.launch(worker, args=(world_size, args), nprocs=world_size)


if __name__ == "__main__":
    main()
