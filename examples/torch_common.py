"""What the two training examples share: the model, a learnable synthetic
task, and a loop that trains one model per backend side by side, step by
step, in alternating order, timing each."""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    """A small convolutional classifier of 28x28 images into 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


# Each class is a fixed random image (the same on every rank); a sample is
# its class's image under noise, so the task is learnable and loss falls.
_TEMPLATES = torch.randn(10, 1, 28, 28, generator=torch.Generator().manual_seed(42))


def batch(generator, size):
    y = torch.randint(0, 10, (size,), generator=generator)
    x = _TEMPLATES[y] + 2.0 * torch.randn(size, 1, 28, 28, generator=generator)
    return x, y


def parse(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--backend", default="both", choices=["coll", "gloo", "both"],
                   help="both: one model per backend, trained side by side in one run (default)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    return p.parse_args()


def init(backend):
    """The process groups, from torchrun's or collrun's variables: one per
    backend asked for; with both, coll is the default group."""
    if backend in ("coll", "both"):
        import coll.torch  # noqa: F401  (registers the backend "coll")
    dist.init_process_group("coll" if backend == "both" else backend, init_method="env://")
    # The ranks share this machine's cores (torchrun does the same).
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    if backend == "both":
        return {"coll": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    return {backend: dist.group.WORLD}


def train(groups, wrap, steps, batch_size):
    """Trains wrap(Net(), group) for each group from the same start, the same
    batches, alternating which goes first; returns the models."""
    rank, size = dist.get_rank(), dist.get_world_size()
    models, opts, times = {}, {}, {name: [] for name in groups}
    for name, group in groups.items():
        torch.manual_seed(0)
        models[name] = wrap(Net(), group)
        opts[name] = torch.optim.SGD(models[name].parameters(), lr=0.02, momentum=0.9)
    g = torch.Generator().manual_seed(1000 + rank)
    names = list(groups)
    for step in range(steps):
        x, y = batch(g, batch_size)
        order = names if step % 2 == 0 else names[::-1]
        losses = {}
        for name in order:
            dist.barrier(group=groups[name])  # each step starts together on every rank
            t = time.perf_counter()
            opts[name].zero_grad()
            loss = F.cross_entropy(models[name](x), y)
            loss.backward()
            opts[name].step()
            times[name].append(time.perf_counter() - t)
            losses[name] = loss.item()
        if rank == 0 and (step % 25 == 0 or step == steps - 1):
            cols = "   ".join(f"{n} loss {losses[n]:.4f} {times[n][-1] * 1e3:7.1f} ms" for n in names)
            print(f"step {step:4d}   {cols}", flush=True)
    if rank == 0:
        skip = min(10, steps // 2)  # the first steps build buckets and warm caches
        med = {n: statistics.median(times[n][skip:]) * 1e3 for n in names}
        print(f"{size} ranks, median step: " + ", ".join(f"{n} {med[n]:.2f} ms" for n in names)
              + (f" (coll/gloo {med['coll'] / med['gloo']:.3f})" if len(names) == 2 else ""), flush=True)
    return models
