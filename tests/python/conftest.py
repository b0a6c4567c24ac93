"""Runs a test body on several ranks: real processes (forked), each with its
own coll.Communicator of one job, as the C++ multirank tests do."""
import pytest

import coll
from forked import run_forked


def run_ranks(nranks, body, timeout=120, env=None):
    """body(comm) on ranks 0..nranks-1; fails with every rank's traceback."""
    uid = coll.unique_id()

    def rank_main(rank):
        comm = coll.Communicator(nranks, uid, rank)
        body(comm)
        comm.destroy()

    run_forked(nranks, rank_main, timeout, env)


@pytest.fixture
def ranks():
    return run_ranks
