"""Ranks as real processes, forked: each runs rank_main(rank), and a
failure's traceback comes back to the test, which fails with it."""
import multiprocessing
import os
import traceback


def _child(rank_main, rank, env, errors):
    os.environ.update(env)
    try:
        rank_main(rank)
    except BaseException:  # reported to the parent, which fails the test with it
        errors.put(f"rank {rank}:\n{traceback.format_exc()}")
        errors.close()
        errors.join_thread()  # flushed before the process ends without cleanup
        os._exit(1)
    os._exit(0)


def run_forked(nranks, rank_main, timeout, env=None, killed=()):
    """rank_main(rank) in nranks processes; fails with every failing rank's
    traceback, or names the ranks still running after `timeout` seconds.
    The ranks in `killed` must end by SIGKILL, the others cleanly."""
    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(rank_main, r, env or {}, errors)) for r in range(nranks)]
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
    want = [-9 if r in killed else 0 for r in range(nranks)]
    assert not reports and [p.exitcode for p in procs] == want, "\n".join(reports) or [p.exitcode for p in procs]
