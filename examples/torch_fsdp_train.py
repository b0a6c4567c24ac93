"""The small convolutional model of torch_common trained under
FullyShardedDataParallel (each rank holds a shard of every layer's
parameters: all-gathered for compute, gradients reduce-scattered) on a
synthetic task, over coll and gloo side by side (or one of them).

    build/tools/collrun -n 4 python examples/torch_fsdp_train.py [--backend coll|gloo|both] [--steps 300]
    torchrun --nproc-per-node 4 examples/torch_fsdp_train.py
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

from torch_common import init, parse, train


def wrap(net, group):
    # One FSDP unit per layer with parameters, so that shards move layer by layer.
    return FSDP(net, process_group=group, device_id=torch.device("cpu"),
                auto_wrap_policy=ModuleWrapPolicy({nn.Conv2d, nn.Linear}))


def main():
    args = parse(__doc__.splitlines()[0])
    groups = init(args.backend)
    models = train(groups, wrap, args.steps, args.batch)
    if len(models) == 2:
        full = {}
        for name, model in models.items():
            with FSDP.summon_full_params(model):
                full[name] = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        if dist.get_rank() == 0:
            a, b = full["coll"], full["gloo"]
            print(f"weights, coll against gloo: {'bit-identical' if torch.equal(a, b) else 'differ'}; "
                  f"max difference {(a - b).abs().max().item():.3g} (largest weight {b.abs().max().item():.3g})",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
