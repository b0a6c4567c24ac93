"""The Python API around the collectives: argument errors, failures as
coll.Error subclasses naming the rank, non-blocking overlap with the GIL
released, split, shrink, abort, and coll.init() under collrun."""
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import coll
from forked import run_forked


def test_bad_arguments_name_the_argument(ranks):
    def body(comm):
        x = np.zeros(8, np.float32)
        with pytest.raises(coll.InvalidArgument, match="send: a list has no buffer"):
            comm.allreduce([1.0, 2.0])
        with pytest.raises(coll.InvalidArgument, match="send: not contiguous"):
            comm.allreduce(np.zeros((4, 4), np.float32)[:, 1])
        with pytest.raises(coll.InvalidArgument, match="recv: dtype float64, but send is float32"):
            comm.allreduce(x, np.zeros(8, np.float64))
        with pytest.raises(coll.InvalidArgument, match="dtype complex64 is not one coll reduces"):
            comm.allreduce(np.zeros(2, np.complex64))
        with pytest.raises(coll.InvalidArgument, match="read-only"):
            comm.allreduce(np.frombuffer(bytes(8), np.float32))
        with pytest.raises(coll.InvalidArgument, match="op: 'mean'"):
            comm.allreduce(x, op="mean")
        with pytest.raises(coll.InvalidArgument) as e:
            comm.broadcast(x, root=5)
        assert e.value.code == 1 and "root" in str(e.value)
        assert comm.allreduce(x, op="max") is x  # ops by name too
        # A NumPy scalar is immutable: the result would go into a copy of it.
        with pytest.raises(coll.InvalidArgument, match="send: a NumPy scalar .* cannot hold the result"):
            comm.allreduce(np.float64(2.0))
        # Data in another byte order would be reduced as this machine's.
        with pytest.raises(coll.InvalidArgument, match="recv: dtype .* is not in this machine's byte order"):
            comm.allreduce(np.ones(4, np.float32), np.zeros(4, np.dtype(np.float32).newbyteorder()))
        # ctypes would wrap an int too large for C: root 2**32 was root 0.
        with pytest.raises(coll.InvalidArgument, match="root: 4294967296 does not fit a C int"):
            comm.broadcast(x, root=2**32)

    ranks(2, body)


def test_a_read_only_send_copied_by_numpy_is_kept_while_it_runs(ranks):
    def body(comm):
        out = np.zeros(1, np.float64)
        req = comm.allreduce(np.float64(comm.rank + 1), out, async_op=True)  # np.asarray copies the scalar
        junk = [np.full(1, 7.0) for _ in range(1000)]  # what would take the copy's memory, were it freed
        req.wait()
        assert out[0] == 3.0 and len(junk) == 1000

    ranks(2, body)


def test_a_request_completes_once_and_keeps_its_outcome(ranks):
    def body(comm):
        x = np.ones(1 << 20, np.float32)
        if comm.rank == 1:
            time.sleep(0.5)  # rank 0's allreduce cannot end before this rank's starts
        req = comm.allreduce(x, async_op=True)
        # While one thread waits, another's test() says it runs: wait() has not returned.
        waiting, tested = threading.Event(), []

        def waiter():
            waiting.set()
            req.wait()

        thread = threading.Thread(target=waiter)
        thread.start()
        waiting.wait()
        time.sleep(0.1)  # the waiter inside wait()
        tested.append(req.test())
        thread.join()
        if comm.rank == 0:
            assert tested == [False], "test() said done while the other thread still waited"
        assert req.test() and req.wait() is None  # completed: the same outcome again
        np.testing.assert_array_equal(x, np.full(1 << 20, 2, np.float32))
        # A failure is raised again by every later wait() and test().
        if comm.rank == 1:
            comm.abort()
            return
        failing = comm.allreduce(np.zeros(4, np.float32), async_op=True)
        for _ in range(2):
            with pytest.raises(coll.RemoteError):
                failing.wait()
        with pytest.raises(coll.RemoteError):
            failing.test()

    ranks(2, body, env={"COLL_TIMEOUT_MS": "20000"})


def test_ranks_that_disagree_get_invalid_usage(ranks):
    def body(comm):
        with pytest.raises(coll.InvalidUsage, match="rank"):
            if comm.rank == 0:
                comm.allreduce(np.zeros(10, np.float32))
            else:
                comm.allreduce(np.zeros(12, np.float32))

    ranks(2, body, env={"COLL_TIMEOUT_MS": "10000"})


def test_a_dead_rank_is_a_remote_error_naming_it(ranks):
    def body(comm):
        if comm.rank == 1:
            os._exit(0)  # gone without a word
        t = time.monotonic()
        with pytest.raises(coll.RemoteError, match="rank 1"):
            comm.allreduce(np.zeros(1 << 16, np.float32))
        assert time.monotonic() - t < 10

    ranks(2, body, env={"COLL_TIMEOUT_MS": "10000"})


def test_a_revoked_communicator_raises_revoked_everywhere(ranks):
    def body(comm):
        if comm.rank == 0:
            time.sleep(0.3)
            comm.revoke()
        t = time.monotonic()
        with pytest.raises(coll.Revoked, match="revoked") as got:
            comm.allreduce(np.zeros(1 << 16, np.float32))
        assert got.value.code == 8 and time.monotonic() - t < 10

    ranks(3, body, env={"COLL_TIMEOUT_MS": "60000"})


def test_agree_gives_every_rank_the_and_and_the_ranks_gone(ranks):
    def body(comm):
        if comm.rank == 2:
            os._exit(0)  # gone before the call: found, named, its flag not counted
        flag, gone = comm.agree(0b111 ^ (1 << comm.rank))
        assert (flag, gone) == (0b100, [2])

    ranks(3, body, env={"COLL_TIMEOUT_MS": "20000"})


def test_a_spare_joins_by_grow(tmp_path):
    path = tmp_path / "grow_id"

    def rank_main(rank):
        if rank == 2:  # the spare: the id comes from rank 0 through a file
            while not path.exists():
                time.sleep(0.01)
            comm = coll.Communicator(3, path.read_bytes(), 2)
        else:
            members = coll.Communicator(2, uid, rank)
            grow_uid = None
            if rank == 0:
                grow_uid = coll.unique_id()
                tmp = path.with_suffix(".tmp")
                tmp.write_bytes(grow_uid)
                tmp.rename(path)
            comm = members.grow(1, grow_uid)
            members.destroy()
        assert (comm.rank, comm.size) == (rank, 3)
        x = np.full(5, rank + 1, np.int64)
        comm.allreduce(x)
        assert (x == 6).all()
        comm.destroy()

    uid = coll.unique_id()
    run_forked(3, rank_main, 60, {"COLL_TIMEOUT_MS": "20000"})


def test_a_silent_rank_is_a_timeout(ranks):
    def body(comm):
        if comm.rank == 1:
            time.sleep(3)
            comm.abort()
            return
        with pytest.raises(coll.TimeoutError, match="timed out"):
            comm.allreduce(np.zeros(4, np.float32))

    ranks(2, body, env={"COLL_TIMEOUT_MS": "1000"})


def test_the_gil_is_released_and_requests_overlap(ranks):
    def body(comm):
        ticks = [0]
        stop = threading.Event()

        def count():
            while not stop.is_set():
                ticks[0] += 1

        if comm.rank == 1:
            time.sleep(0.5)  # rank 0 waits in a blocking barrier meanwhile
        thread = threading.Thread(target=count)
        thread.start()
        comm.barrier()
        stop.set()
        thread.join()
        if comm.rank == 0:
            assert ticks[0] > 1000, f"the counting thread ran {ticks[0]} times while rank 0 waited"
        x = np.ones(1 << 20, np.float32)
        req = comm.allreduce(x, async_op=True)
        busy = float(np.sum(np.sqrt(np.arange(1 << 18, dtype=np.float64))))  # work while it runs
        req.wait()
        assert busy > 0 and req.test()
        np.testing.assert_array_equal(x, np.full(1 << 20, 2, np.float32))

    ranks(2, body)


def test_split_and_shrink(ranks):
    def body(comm):
        r = comm.rank
        half = comm.split(r % 2, key=-r)  # evens and odds, reversed
        assert half.size == 2 and half.rank == (1 if r < 2 else 0)
        x = np.array([r], np.int64)
        half.allreduce(x)
        assert x[0] == (0 + 2 if r % 2 == 0 else 1 + 3)
        half.destroy()
        assert comm.split(None) is None
        if r == 3:
            return
        small = comm.shrink([3])
        assert small.size == 3 and small.rank == r
        y = np.array([1], np.int32)
        small.allreduce(y)
        assert y[0] == 3
        small.destroy()

    ranks(4, body, env={"COLL_TIMEOUT_MS": "20000"})


def test_init_from_collrun():
    build = pathlib.Path(os.environ.get("COLL_BUILD_DIR", pathlib.Path(__file__).parents[2] / "build"))
    collrun = build / "tools" / "collrun"
    if not collrun.exists():
        pytest.skip(f"{collrun} is not built")
    script = ("import coll, os, numpy as np; c = coll.init(); x = np.full(3, c.rank + 1.0); c.allreduce(x); "
              "os.write(1, f'{c.rank} {c.size} {x.tolist()}\\n'.encode())")  # one write: lines do not interleave
    out = subprocess.run([str(collrun), "-n", "3", sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    lines = sorted(out.stdout.split("\n")[:-1])
    assert lines == [f"{r} 3 [6.0, 6.0, 6.0]" for r in range(3)], out.stdout


def test_a_spare_of_collrun_replaces_a_rank_that_left():
    """collrun --spares 1 -n 3: rank 2 leaves, ranks 0 and 1 shrink and grow
    by one, and the spare, waiting in coll.init(), becomes rank 2."""
    build = pathlib.Path(os.environ.get("COLL_BUILD_DIR", pathlib.Path(__file__).parents[2] / "build"))
    collrun = build / "tools" / "collrun"
    if not collrun.exists():
        pytest.skip(f"{collrun} is not built")
    script = ("import coll, os, numpy as np\n"
              "c = coll.init()\n"
              "if 'COLL_SPARE' not in os.environ:\n"
              "    c.barrier()\n"
              "    if c.rank == 2:\n"
              "        os._exit(0)\n"
              "    c = c.shrink().grow(1)\n"
              "x = np.full(3, c.rank + 1.0); c.allreduce(x)\n"
              "os.write(1, f'{c.rank} {c.size} {x.tolist()}\\n'.encode())\n")
    out = subprocess.run([str(collrun), "--spares", "1", "-n", "3", sys.executable, "-c", script],
                         capture_output=True, text=True, timeout=60, env=dict(os.environ, COLL_TIMEOUT_MS="20000"))
    assert out.returncode == 0, out.stderr
    lines = sorted(out.stdout.split("\n")[:-1])
    assert lines == [f"{r} 3 [6.0, 6.0, 6.0]" for r in range(3)], out.stdout


def test_the_elastic_example_survives_two_kills_bit_for_bit():
    """examples/elastic_train.py under collrun --spares 2 -n 8: two ranks are
    killed, the spares take their places, and rank 0's replay equals."""
    build = pathlib.Path(os.environ.get("COLL_BUILD_DIR", pathlib.Path(__file__).parents[2] / "build"))
    collrun = build / "tools" / "collrun"
    if not collrun.exists():
        pytest.skip(f"{collrun} is not built")
    example = pathlib.Path(__file__).parents[2] / "examples" / "elastic_train.py"
    # A stall fails within the timeout, and collrun ends the rest 60 s after the first failure (the kill).
    out = subprocess.run([str(collrun), "--spares", "2", "--grace", "60", "-n", "8", sys.executable, str(example)],
                         capture_output=True, text=True, timeout=240, env=dict(os.environ, COLL_TIMEOUT_MS="20000"))
    assert out.returncode == 137, out.stderr  # the two ranks killed by SIGKILL
    assert "step 23 failed; lost 3 step(s) since the checkpoint at step 20" in out.stdout, out.stdout
    assert "step 41 failed; lost 1 step(s) since the checkpoint at step 40" in out.stdout, out.stdout
    assert "8 ranks after 60 steps: the model equals a run without failures, bit for bit" in out.stdout, out.stdout


def test_from_mpi4py():
    """A coll communicator of MPI.COMM_WORLD's ranks, in its order, under mpirun."""
    pytest.importorskip("mpi4py")
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed")
    script = ("from mpi4py import MPI; import coll, os, numpy as np; c = coll.from_mpi4py(MPI.COMM_WORLD); "
              "x = np.full(2, 10 ** c.rank, np.int64); c.allreduce(x); "
              "os.write(1, f'{c.rank} {MPI.COMM_WORLD.rank} {c.size} {x.tolist()}\\n'.encode())")
    out = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "3", sys.executable, "-c", script],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    lines = sorted(line for line in out.stdout.split("\n") if line)
    assert lines == [f"{r} {r} 3 [111, 111]" for r in range(3)], out.stdout
