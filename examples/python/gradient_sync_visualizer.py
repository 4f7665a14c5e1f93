#!/usr/bin/env python3
"""Gradient synchronization in data-parallel training: a tiny two-layer model, rank 0's weights
broadcast to all, local forward/backward on different data, all_reduce + average of every
gradient, then all_gather to check that every rank holds identical gradients, equal to the
gradient over the union of all local batches.

    /usr/bin/python3 examples/python/gradient_sync_visualizer.py --world-size 4 [--verbose]
"""
import argparse
import os

import torch
import torch.nn as nn

import weft
import weft.distributed as dist


class TinyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(4, 3, bias=False)
        self.layer2 = nn.Linear(3, 2, bias=False)

    def forward(self, x):
        return self.layer2(torch.relu(self.layer1(x)))


def batch(rank):
    generator = torch.Generator().manual_seed(rank * 100)
    return torch.randn(8, 4, generator=generator), torch.randn(8, 2, generator=generator)


def visualize_sync(rank, world_size, verbose):
    dist.init_process_group(backend="weft")
    world_size = dist.get_world_size()
    torch.manual_seed(1000 + rank)  # different weights everywhere until the broadcast
    model = TinyModel()
    for param in model.parameters():
        dist.broadcast(param.data, src=0)

    inputs, target = batch(rank)
    loss = ((model(inputs) - target) ** 2).mean()
    model.zero_grad()
    loss.backward()
    before = {name: p.grad.clone() for name, p in model.named_parameters()}
    if verbose:
        for name, grad in before.items():
            print(f"[rank {rank}] before sync {name} grad[0,0] = {grad[0, 0].item():.6f}")

    for param in model.parameters():
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad /= world_size

    # every rank holds the same gradients...
    for name, param in model.named_parameters():
        flat = param.grad.flatten()
        gathered = [torch.zeros_like(flat) for _ in range(world_size)]
        dist.all_gather(gathered, flat)
        same = all(torch.equal(gathered[0], g) for g in gathered[1:])
        assert same, f"{name}: ranks hold different gradients"
        if rank == 0:
            print(f"  {'✓' if same else '✗'} {name}: all ranks identical = {same}")
        if verbose:
            change = (param.grad - before[name]).abs().mean() / (before[name].abs().mean() + 1e-8)
            print(f"[rank {rank}] {name} changed by {100 * change.item():.1f}%")

    # ...equal to the gradient over the whole distributed batch (equal local batch sizes)
    reference = TinyModel()
    reference.load_state_dict(model.state_dict())
    all_inputs = torch.cat([batch(r)[0] for r in range(world_size)])
    all_targets = torch.cat([batch(r)[1] for r in range(world_size)])
    ((reference(all_inputs) - all_targets) ** 2).mean().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6), "synchronized gradient != full-batch gradient"
    dist.barrier()
    if rank == 0:
        print(f"OK: {world_size} ranks hold the full-batch gradient")
        try:
            import matplotlib  # noqa: F401
            print("(matplotlib is installed; this example prints instead of plotting)")
        except ImportError:
            pass
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="Gradient sync visualizer")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    weft.launch(visualize_sync, args=(world_size, args.verbose), nprocs=world_size)


if __name__ == "__main__":
    main()
