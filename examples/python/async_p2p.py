#!/usr/bin/env python3
"""Seed 002's tour: blocking send/recv, non-blocking isend/irecv synchronized by wait(), an
all_reduce inside new_group([0, 1]), and synchronous SGD with a partitioned dataset whose
gradients are averaged with all_reduce (it trains for real: the loss must fall, and every rank
ends with the same weights).

    /usr/bin/python3 examples/python/async_p2p.py --world-size 4
"""
import argparse
import os

import torch

import weft
import weft.distributed as dist


def average_gradients(model):
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad /= size


def run(rank, world_size):
    dist.init_process_group(backend="weft")
    world_size = dist.get_world_size()

    # blocking: rank 0 -> rank 1
    tensor = torch.zeros(1)
    if rank == 0:
        tensor += 1
        dist.send(tensor=tensor, dst=1)
    elif rank == 1:
        dist.recv(tensor=tensor, src=0)
    assert tensor[0] == (1 if rank < 2 else 0)

    # non-blocking: the tensor is undefined until wait() returns
    tensor = torch.zeros(1)
    request = None
    if rank == 0:
        tensor += 1
        request = dist.isend(tensor=tensor, dst=1)
    elif rank == 1:
        request = dist.irecv(tensor=tensor, src=0)
    if request is not None:
        request.wait()
    assert tensor[0] == (1 if rank < 2 else 0)
    print(f"[rank {rank}] has data {tensor[0].item()}")

    # all_reduce in a group of ranks 0 and 1 (every rank calls new_group)
    group = dist.new_group([0, 1])
    tensor = torch.ones(1)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=group)
    assert tensor[0] == (2 if rank < 2 else 1)

    # synchronous SGD on y = 3x - 1 with noise, dataset partitioned by rank
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 1, generator=generator)
    y = 3 * x - 1 + 0.01 * torch.randn(1024, 1, generator=generator)
    part = slice(rank * len(x) // world_size, (rank + 1) * len(x) // world_size)
    x, y = x[part], y[part]
    torch.manual_seed(rank)
    model = torch.nn.Linear(1, 1)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    losses = []
    for epoch in range(10):
        epoch_loss = 0.0
        for i in range(0, len(x), 32):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[i:i + 32]), y[i:i + 32])
            epoch_loss += loss.item()
            loss.backward()
            average_gradients(model)
            optimizer.step()
        losses.append(epoch_loss)
        if rank == 0:
            print(f"rank {dist.get_rank()}, epoch {epoch}: {epoch_loss:.5f}")
    assert losses[-1] < losses[0] / 10, losses
    weights = torch.cat([p.data.flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(weights) for _ in range(world_size)]
    dist.all_gather(gathered, weights)
    assert all(torch.equal(gathered[0], w) for w in gathered), "ranks diverged"
    assert abs(weights[0].item() - 3) < 0.1 and abs(weights[1].item() + 1) < 0.1, weights
    if rank == 0:
        print(f"OK: learned w={weights[0].item():.3f} b={weights[1].item():.3f} on {world_size} ranks")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description="p2p, groups and distributed SGD")
    parser.add_argument("--world-size", "-w", type=int, default=4)
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", args.world_size))
    if world_size < 2:
        parser.error("needs --world-size 2 or more")
    weft.launch(run, args=(world_size,), nprocs=world_size)


if __name__ == "__main__":
    main()
