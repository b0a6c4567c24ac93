"""coll as a torch.distributed backend: every operation DDP and FSDP call,
for every dtype, against NumPy's results; futures; groups (new_group,
split_group); errors named as coll names them."""
import datetime
import os
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from torch_ranks import run  # noqa: E402

DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64]
OPS = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod, dist.ReduceOp.MIN: np.min,
       dist.ReduceOp.MAX: np.max}


def values(rank, count, op=None):
    """Small integers, so that every dtype holds every result exactly."""
    i = np.arange(count)
    return (i + rank) % 2 + 1 if op == dist.ReduceOp.PRODUCT else (i * 7 + rank * 3) % 13 + 1


def tensor(a, dtype):
    return torch.from_numpy(np.asarray(a, dtype=np.float64)).to(dtype)


def test_every_operation_and_dtype():
    counts = [0, 1, 7, 1031]

    def body(r, n):
        for dtype in DTYPES:
            for count in counts:
                what = f"{dtype} count {count}"
                for op, reduce in OPS.items():
                    x = tensor(values(r, count, op), dtype)
                    dist.all_reduce(x, op=op)
                    want = reduce(np.stack([values(p, count, op) for p in range(n)]), axis=0)
                    assert torch.equal(x, tensor(want, dtype)), (what, op)
                if dtype.is_floating_point:
                    x = tensor(values(r, count), dtype)
                    dist.all_reduce(x, op=dist.ReduceOp.AVG)
                    want = sum(values(p, count) for p in range(n)) / n
                    assert torch.equal(x, tensor(want, torch.float64).to(dtype)), (what, "avg")
                b = tensor(values(r, count), dtype)
                dist.broadcast(b, src=n - 1)
                assert torch.equal(b, tensor(values(n - 1, count), dtype)), (what, "broadcast")
                red = tensor(values(r, count), dtype)
                dist.reduce(red, dst=1, op=dist.ReduceOp.MAX)
                if r == 1:
                    assert torch.equal(red, tensor(np.max([values(p, count) for p in range(n)], axis=0), dtype)), what
                outs = [torch.zeros(count, dtype=dtype) for _ in range(n)]
                dist.all_gather(outs, tensor(values(r, count), dtype))
                assert all(torch.equal(o, tensor(values(p, count), dtype)) for p, o in enumerate(outs)), what
                big = torch.zeros(count * n, dtype=dtype)
                dist.all_gather_into_tensor(big, tensor(values(r, count), dtype))
                assert torch.equal(big, tensor(np.concatenate([values(p, count) for p in range(n)]), dtype)), what
                mine = torch.zeros(count, dtype=dtype)
                dist.reduce_scatter_tensor(mine, tensor(values(r, count * n), dtype))
                summed = np.sum([values(p, count * n) for p in range(n)], axis=0)
                assert torch.equal(mine, tensor(summed[r * count:(r + 1) * count], dtype)), (what, "reduce_scatter")
                part = torch.zeros(count, dtype=dtype)
                dist.reduce_scatter(part, [tensor(values(r + p, count), dtype) for p in range(n)])
                assert torch.equal(part, tensor(np.sum([values(p + r, count) for p in range(n)], axis=0), dtype))
                a2a = torch.zeros(count * n, dtype=dtype)
                dist.all_to_all_single(a2a, tensor(values(r, count * n), dtype))
                want = np.concatenate([values(p, count * n)[r * count:(r + 1) * count] for p in range(n)])
                assert torch.equal(a2a, tensor(want, dtype)), (what, "alltoall")
                if r == 0:
                    dist.send(tensor(values(5, count), dtype), dst=n - 1)
                elif r == n - 1:
                    got = torch.zeros(count, dtype=dtype)
                    dist.recv(got, src=0)
                    assert torch.equal(got, tensor(values(5, count), dtype)), (what, "send/recv")
        dist.barrier()

    run(3, body)


def test_coalesced_and_non_contiguous_lists():
    def body(r, n):
        ts = [torch.full((3,), float(r)), torch.full((2, 2), r + 1, dtype=torch.float32)]
        dist.all_reduce_coalesced(ts)
        assert torch.equal(ts[0], torch.full((3,), float(sum(range(n)))))
        assert torch.equal(ts[1], torch.full((2, 2), float(sum(range(1, n + 1)))))
        outs = [torch.zeros(4), torch.zeros(6)]
        ins = [torch.full((2,), float(r)), torch.full((3,), float(10 + r))]
        with dist._coalescing_manager():
            for o, i in zip(outs, ins):
                dist.all_gather_into_tensor(o, i)
        assert torch.equal(outs[0], torch.tensor([0.0, 0.0, 1.0, 1.0]))
        assert torch.equal(outs[1], torch.tensor([10.0] * 3 + [11.0] * 3))
        with pytest.raises(Exception, match="not contiguous"):
            dist.all_reduce(torch.zeros(4, 4).t())

    run(2, body)


def test_futures_complete_in_order_while_the_caller_works():
    """Non-blocking operations: the caller goes on while coll works, and
    each future holds its own result once it completes."""
    def body(r, n):
        works = [dist.all_reduce(torch.full((1 << 16,), float(k + r)), async_op=True) for k in range(8)]
        busy = torch.randn(256, 256)
        for _ in range(20):
            busy = busy @ busy.t() / 256  # the caller's compute, overlapping
        for k, w in enumerate(works):
            out = w.get_future().wait()[0]
            assert torch.equal(out, torch.full((1 << 16,), float(n * k + sum(range(n)))))
            assert w.is_completed() and w.is_success()
        chained = dist.all_reduce(torch.ones(5), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
        assert torch.equal(chained.wait(), torch.full((5,), 2.0 * n))

        # A callback that waits for another collective of the group, as PowerSGD's hook does.
        def nested(f):
            y = torch.full((3,), 2.0)
            dist.all_reduce(y, async_op=True).get_future().wait()
            return f.value()[0] + y

        both = dist.all_reduce(torch.ones(3), async_op=True).get_future().then(nested)
        assert torch.equal(both.wait(), torch.full((3,), 3.0 * n))

    run(3, body)


def test_wait_with_a_timeout_and_results_in_place_for_later_operations():
    """Work.wait(timeout) raises once it has passed, as torch's does; the
    operation goes on. A list's results are copied back before any later
    operation of the group completes."""
    def body(r, n):
        if r == 1:
            time.sleep(2)
        x = torch.ones(4)
        work = dist.all_reduce(x, async_op=True)
        if r == 0:
            with pytest.raises(Exception, match="timed out after 300 ms"):
                work.wait(timeout=datetime.timedelta(milliseconds=300))
        assert work.wait()
        assert torch.equal(x, torch.full((4,), float(n)))
        for _ in range(20):
            outs = [torch.zeros(1 << 12) for _ in range(n)]
            gather = dist.all_gather(outs, torch.full((1 << 12,), float(r)), async_op=True)
            dist.barrier()
            assert all(torch.equal(o, torch.full((1 << 12,), float(p))) for p, o in enumerate(outs))
            gather.wait()

    run(2, body)


def test_wait_with_a_timeout_returns_before_the_futures_callbacks_run():
    """As wait() without a timeout does, and torch's own Work: a callback
    still running (here until the caller lets it go) does not hold it."""
    def body(r, n):
        if r == 1:
            time.sleep(1)  # rank 0's operation is still going when it adds its callback
            assert dist.all_reduce(torch.ones(4), async_op=True).wait()
            return
        let_go, ran = threading.Event(), []
        work = dist.all_reduce(torch.ones(4), async_op=True)
        after = work.get_future().then(lambda f: ran.append(let_go.wait(60)))
        assert work.wait(timeout=datetime.timedelta(seconds=120))
        assert not ran, "Work.wait(timeout) returned only once the future's callback had run"
        let_go.set()
        after.wait()
        assert ran == [True]

    run(2, body)


def test_new_group():
    def body(r, n):
        evens = dist.new_group([0, 2])
        x = torch.tensor([float(r)])
        if r in (0, 2):
            dist.all_reduce(x, group=evens)
            assert x.item() == 2.0
        dist.barrier()

    run(3, body)


def test_split_group_splits_the_communicator():
    """dist.split_group: coll_comm_split over the parent; a rank in no split gets no group."""
    def body(r, n):
        pg = dist.split_group(split_ranks=[[3, 1], [0]])
        if r == 2:
            assert pg == dist.GroupMember.NON_GROUP_MEMBER
        else:
            x = torch.tensor([float(r + 1)])
            dist.all_reduce(x, group=pg)
            assert x.item() == {0: 1.0, 1: 6.0, 3: 6.0}[r]
            if r in (1, 3):
                assert dist.get_rank(pg) == {3: 0, 1: 1}[r]
        dist.barrier()

    run(4, body)


def test_bad_input_is_refused_with_the_reason():
    def body(r, n):
        with pytest.raises(Exception, match="UInt16 are not supported"):
            dist.all_reduce(torch.zeros(3, dtype=torch.uint16))
        with pytest.raises(Exception, match="BAND|reduce op"):
            dist.all_reduce(torch.zeros(3, dtype=torch.int32), op=dist.ReduceOp.BAND)
        with pytest.raises(Exception, match="Double where Float is expected|dtype"):
            dist.all_gather_into_tensor(torch.zeros(2 * n, dtype=torch.float64), torch.zeros(2))
        with pytest.raises(Exception, match="split sizes"):
            dist.all_to_all_single(torch.zeros(3), torch.zeros(3), [1, 2], [2, 1])
        # Coalesced, a list of two dtypes would be reduced as one (70000 as float16: inf).
        big, half = torch.tensor([70000]), torch.zeros(1, dtype=torch.float16)
        with pytest.raises(Exception, match="takes one dtype: Long and Half"):
            with dist._coalescing_manager():
                dist.all_reduce(big)
                dist.all_reduce(half)
        assert big.item() == 70000
        dist.barrier()  # still usable

    run(2, body)


def test_a_silent_rank_times_out_within_the_groups_timeout():
    """init_process_group's timeout is coll's for the group: a rank that never
    arrives makes the others raise coll's timeout, naming it, in about that time."""
    def body(r, n):
        dist.barrier()
        if r == 1:
            time.sleep(30)
            os._exit(0)
        t = time.monotonic()
        with pytest.raises(Exception, match="rank 1") as e:
            dist.all_reduce(torch.ones(8))
        took = time.monotonic() - t
        assert 2.5 < took < 15, (took, str(e.value))
        assert "timed out" in str(e.value) or "timeout" in str(e.value).lower(), str(e.value)
        os._exit(0)

    run(2, body, init={"timeout": datetime.timedelta(seconds=3)}, timeout=60)
