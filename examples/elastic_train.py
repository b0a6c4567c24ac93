"""elastic_train.py: examples/elastic_train.c in Python, with coll's package.

Training that survives failures, with hot spares and state rebuilt from
peers' memory instead of a checkpoint on disk. Eight ranks each hold one
shard of a model (64-bit integers, so every sum is exact in any order);
each step the gradients are summed and every shard takes a step with the
sum. Every 5 steps each rank keeps a copy of its shard and sends one to its
right neighbour: a buddy checkpoint in memory. Two ranks die (SIGKILL), one
after the other; each time the others revoke, shrink, agree on the
checkpoint to resume from, grow by a spare (waiting in coll.init()), send
the spare the dead rank's shard from its buddy's copy, and train on. At the
end rank 0 replays the steps alone and checks the model bit for bit.

Run it with: collrun --spares 2 --grace 600 -n 8 python3 elastic_train.py
(collrun then reports the killed ranks and exits with 137).
"""
import os
import signal
import sys
import time

import numpy as np

import coll

SHARDS, LEN, STEPS, EVERY = 8, 4096, 60, 5
KILLS = {(2, 23), (5, 41)}  # (shard, step): its first holder dies there
U64 = np.uint64


def mix(x):
    x = x ^ (x >> U64(33))
    x = x * U64(0xff51afd7ed558ccd)
    x = x ^ (x >> U64(33))
    x = x * U64(0xc4ceb9fe1a85ec53)
    return x ^ (x >> U64(33))


def start_shard(shard):
    return mix(np.arange(LEN, dtype=U64) + U64(shard * LEN))


def gradient(w, step):
    return mix(w + U64(step * 1000003) + np.arange(LEN, dtype=U64))


def take_step(w, total, shard):
    return w * U64(6364136223846793005) + total + U64(shard)


class Trainer:
    def __init__(self):
        self.spare = "COLL_SPARE" in os.environ
        self.comm = coll.init()  # a spare waits here until the others grow
        self.shard = -1 if self.spare else self.comm.rank
        self.w = None if self.spare else start_shard(self.shard)
        self.saved_step = [-1, -1]  # the two newest checkpoints, by step
        self.saved = [np.zeros(LEN, U64), np.zeros(LEN, U64)]  # this shard at each
        self.buddy = [np.zeros(LEN, U64), np.zeros(LEN, U64)]  # the left neighbour's at each

    def holders(self):
        shards = np.zeros(self.comm.size, np.int32)
        self.comm.allgather(np.array([self.shard], np.int32), shards)
        return {int(d): r for r, d in enumerate(shards)}

    def checkpoint(self, step):
        """Keeps this shard and sends it to the right neighbour, which keeps it too."""
        where, k = self.holders(), step // EVERY % 2
        self.saved[k][:] = self.w
        sent = self.comm.send(self.w, where[(self.shard + 1) % SHARDS], async_op=True)
        self.comm.recv(self.buddy[k], where[(self.shard - 1) % SHARDS])
        sent.wait()
        self.saved_step[k] = step

    def rebuild(self, resume):
        """On the grown communicator, old ranks and spares alike: the spares'
        shards from their buddies, every shard back at checkpoint `resume`."""
        held = set(self.holders())
        orphans = [d for d in range(SHARDS) if d not in held]
        info = np.array([resume, len(orphans)] + orphans + [0] * (SHARDS - len(orphans)), np.int32)
        self.comm.broadcast(info, root=0)  # rank 0's word counts
        resume, n = int(info[0]), int(info[1])
        orphans, k = [int(d) for d in info[2:2 + n]], resume // EVERY % 2
        if self.shard < 0:  # a spare: the j-th orphan shard
            self.shard = orphans[self.comm.rank - (self.comm.size - n)]
        where = self.holders()
        for d in orphans:  # the orphan's right neighbour has its copy
            if (d + 1) % SHARDS not in held:
                sys.exit(f"shard {d}: its buddy died too, no copy is left")
            if self.comm.rank == where[(d + 1) % SHARDS]:
                self.comm.send(self.buddy[k], where[d])
            if self.comm.rank == where[d]:
                self.comm.recv(self.saved[k], where[(d + 1) % SHARDS])
        self.w = self.saved[k].copy()
        self.saved_step = [-1, -1]  # checkpoint again at once: the spares' buddies need copies
        return resume

    def recover(self, step, failed_at):
        self.comm.revoke()  # any rank still waiting stops now
        survivors = self.comm.shrink()
        self.comm.destroy()
        newest = np.array([max(self.saved_step)], np.int32)
        survivors.allreduce(newest, op=coll.MIN)
        newest = int(newest[0])
        have, _ = survivors.agree(newest >= 0 and self.saved_step[newest // EVERY % 2] == newest)
        if not have:
            sys.exit("no checkpoint that every survivor has (a rank died while one was being made)")
        self.comm = survivors.grow(SHARDS - survivors.size)
        survivors.destroy()
        resume = self.rebuild(newest)
        if self.comm.rank == 0:
            print(f"step {step} failed; lost {step - resume} step(s) since the checkpoint at step {resume}; "
                  f"rebuilt in {(time.monotonic() - failed_at) * 1e3:.1f} ms", flush=True)
        return resume

    def train(self):
        step = self.rebuild(-1) if self.spare else 0
        while step < STEPS:
            try:
                if step % EVERY == 0 and self.saved_step[step // EVERY % 2] != step:
                    self.checkpoint(step)
                if not self.spare and (self.shard, step) in KILLS:
                    os.kill(os.getpid(), signal.SIGKILL)
                g = gradient(self.w, step)
                self.comm.allreduce(g)
            except coll.Error:
                step = self.recover(step, time.monotonic())
                continue
            self.w = take_step(self.w, g, self.shard)
            step += 1
        return self.model()

    def model(self):
        """The model in shard order, on rank 0."""
        where = self.holders()
        everything = np.zeros(self.comm.size * LEN, U64)
        self.comm.allgather(self.w, everything)
        return np.concatenate([everything[where[d] * LEN:(where[d] + 1) * LEN] for d in range(SHARDS)])


def a_run_without_failures():
    w = [start_shard(d) for d in range(SHARDS)]
    for step in range(STEPS):
        total = sum((gradient(w[d], step) for d in range(SHARDS)), np.zeros(LEN, U64))
        w = [take_step(w[d], total, d) for d in range(SHARDS)]
    return np.concatenate(w)


def main():
    np.seterr(over="ignore")  # the arithmetic is modulo 2^64 on purpose
    trainer = Trainer()
    model = trainer.train()
    if trainer.comm.rank == 0:
        equal = np.array_equal(model, a_run_without_failures())
        print(f"{trainer.comm.size} ranks after {STEPS} steps: the model "
              f"{'equals' if equal else 'DIFFERS FROM'} a run without failures, bit for bit", flush=True)
        if not equal:
            sys.exit(2)
    trainer.comm.destroy()


if __name__ == "__main__":
    main()
