"""The small convolutional model of torch_common trained with
DistributedDataParallel on a synthetic task, over coll and gloo side by
side (or one of them), printing loss and step time of each.

    build/tools/collrun -n 4 python examples/torch_ddp_train.py [--backend coll|gloo|both] [--steps 300]
    torchrun --nproc-per-node 4 examples/torch_ddp_train.py

With both, it ends by comparing the two models' weights: bit-identical on
2 ranks, within float32 rounding on more (the sums' order differs).
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_common import init, parse, train


def main():
    args = parse(__doc__.splitlines()[0])
    groups = init(args.backend)
    models = train(groups, lambda net, group: DDP(net, process_group=group), args.steps, args.batch)
    if len(models) == 2 and dist.get_rank() == 0:
        a, b = ([p.detach().reshape(-1) for p in models[n].parameters()] for n in ("coll", "gloo"))
        a, b = torch.cat(a), torch.cat(b)
        diff = (a - b).abs().max().item()
        print(f"weights, coll against gloo: {'bit-identical' if torch.equal(a, b) else 'differ'}; "
              f"max difference {diff:.3g} (largest weight {b.abs().max().item():.3g})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
