"""Runs a body on ranks of a torch.distributed job: forked processes, each
initialising the default group (coll or gloo) over a TCP store."""
import socket

import torch
import torch.distributed as dist

import coll.torch  # noqa: F401  (its extension is built here once, before the ranks fork)
from forked import run_forked


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(n, body, backend="coll", timeout=300, env=None, init=None, killed=()):
    """body(rank, n) on n ranks of a default group of `backend`, created with
    init_process_group(**init); see run_forked for `timeout` and `killed`."""
    port = _free_port()

    def rank_main(rank):
        torch.set_num_threads(1)  # n ranks share this machine's cores
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n,
                                **(init or {}))
        body(rank, n)
        dist.destroy_process_group()

    run_forked(n, rank_main, timeout, env, killed)
