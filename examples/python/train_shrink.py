#!/usr/bin/env python3
"""Data-parallel training that loses a rank mid-epoch and finishes with the others.

    /usr/bin/python3 examples/python/train_shrink.py --world-size 4
    weftrun -n 4 /usr/bin/python3 examples/python/train_shrink.py

Every step trains on one global batch, split evenly across the ranks; each rank computes the
gradient of its share, and an all_reduce (weft.distributed, on torch tensors) averages them,
which is the whole batch's gradient. At --kill-step, rank --victim exits on the spot, as a
crash would (no goodbye to its peers). The others' all_reduce of that step fails
(PeerFailureError, or AbortedError when a peer gave up first); they call shrink(), get a group
of the survivors ranked in the old order, split the same global batch among fewer ranks, redo
the step and finish the epochs. Since every step still averages the gradient of the whole
batch, the survivors end with the parameters a single process gets on the same batches: each
checks that, and that they all hold the same parameters, before rank 0 prints OK.
"""
import argparse
import datetime
import os

import torch
import torch.nn as nn

import weft
import weft.distributed as dist

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


def share(batch, rank, size):
    """This rank's part of the global batch (the parts differ by one sample at most)."""
    return batch.tensor_split(size)[rank]


def local_gradient(model, x, y, indices, batch_size):
    """The gradient of this rank's part of the batch loss (a sum over the whole global batch
    divided by its size, so that the parts' gradients add up to the batch's)."""
    model.zero_grad()
    loss = ((model(x[indices]) - y[indices]) ** 2).sum() / batch_size
    loss.backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def apply_gradient(model, flat, lr):
    with torch.no_grad():
        offset = 0
        for p in model.parameters():
            p -= lr * flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def reference_parameters(x, y, args):
    """What one process gets training on the whole of every global batch."""
    model = make_model()
    for _, _, batch in batches(x, args):
        apply_gradient(model, local_gradient(model, x, y, batch, args.batch_size), args.lr)
    return flat_parameters(model)


def worker(rank, world_size, args):
    torch.set_num_threads(1)
    dist.init_process_group("weft", timeout=datetime.timedelta(seconds=args.timeout))
    group = dist.group.WORLD
    x, y = make_data(args.samples)
    model = make_model()
    global_step = 0
    for epoch, step, batch in batches(x, args):
        if rank == args.victim and global_step == args.kill_step:
            print(f"[rank {rank}] exiting mid-epoch (epoch {epoch}, step {step})", flush=True)
            os._exit(0)  # as a crash: no destructor, no goodbye to the peers
        while True:
            mine = share(batch, dist.get_rank(group), group.size())
            gradient = local_gradient(model, x, y, mine, args.batch_size)
            try:
                dist.all_reduce(gradient, group=group)  # the sum of the parts: the batch's
                break
            except (weft.PeerFailureError, weft.AbortedError, weft.TimeoutError) as error:
                # Every survivor is in this same all_reduce (it needs every member), so they
                # all redo this step, with the batch split among fewer ranks.
                group = group.shrink()
                if dist.get_rank(group) == 0:
                    print(f"epoch {epoch} step {step}: {type(error).__name__}; continuing "
                          f"with ranks {group.ranks} of the {world_size}", flush=True)
        apply_gradient(model, gradient, args.lr)
        global_step += 1

    mine = flat_parameters(model)
    everyone = torch.zeros(group.size() * mine.numel(), dtype=mine.dtype)
    dist.all_gather_into_tensor(everyone, mine, group=group)
    identical = all(torch.equal(part, mine) for part in everyone.split(mine.numel()))
    matches = torch.allclose(mine, reference_parameters(x, y, args), rtol=1e-9, atol=1e-12)
    loss = (((model(x) - y) ** 2).mean()).item()
    if not (identical and matches):
        raise SystemExit(f"rank {rank}: FAILED: parameters identical on the survivors: "
                         f"{identical}; equal to one process's training: {matches}")
    if dist.get_rank(group) == 0:
        print(f"OK: {group.size()} of {world_size} ranks finished {args.epochs} epochs after "
              f"losing rank {args.victim}; parameters identical and equal to a single "
              f"process's (loss {loss:.4f})", flush=True)
    dist.destroy_process_group()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--victim", type=int, default=None,
                        help="the rank that exits (default: world size // 2; never 0, whose "
                             "process serves the store when weft.spawn starts the job)")
    parser.add_argument("--kill-step", type=int, default=17,
                        help="the global step before which the victim exits (17: mid-epoch 1)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=576)
    parser.add_argument("--batch-size", type=int, default=48, help="global batch size")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds the group waits for a peer")
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
