"""Runs a test body on several ranks: real processes (forked), each with its
own coll.Communicator of one job, as the C++ multirank tests do."""
import multiprocessing
import os
import traceback

import pytest

import coll


def _rank_main(body, nranks, uid, rank, env, errors):
    os.environ.update(env)
    try:
        comm = coll.Communicator(nranks, uid, rank)
        body(comm)
        comm.destroy()
    except BaseException:  # reported to the parent, which fails the test with it
        errors.put(f"rank {rank}:\n{traceback.format_exc()}")
        errors.close()
        errors.join_thread()  # flushed before the process ends without cleanup
        os._exit(1)
    os._exit(0)


def run_ranks(nranks, body, timeout=120, env=None):
    """body(comm) on ranks 0..nranks-1; fails with every rank's traceback."""
    ctx = multiprocessing.get_context("fork")
    uid = coll.unique_id()
    errors = ctx.Queue()
    procs = [ctx.Process(target=_rank_main, args=(body, nranks, uid, r, env or {}, errors)) for r in range(nranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    hung = [r for r, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
    reports = []
    while not errors.empty():
        reports.append(errors.get())
    assert not hung, f"ranks {hung} still running after {timeout} s"
    assert not reports and all(p.exitcode == 0 for p in procs), "\n".join(reports) or [p.exitcode for p in procs]


@pytest.fixture
def ranks():
    return run_ranks
