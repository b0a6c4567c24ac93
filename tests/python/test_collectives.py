"""Every collective on NumPy arrays against NumPy's own results: every dtype
(bfloat16 as ml_dtypes', and through torch), every op, counts 0, 1, 7, 1023 and 65537, 1 to 4
ranks, in place and out of place."""
import numpy as np
import pytest

import coll

import ml_dtypes

DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", ml_dtypes.bfloat16, "float32", "float64"]
OPS = {"sum": coll.SUM, "prod": coll.PROD, "min": coll.MIN, "max": coll.MAX, "avg": coll.AVG}
COUNTS = [0, 1, 7, 1023, 65537]


def data(rank, count, dtype, op):
    i = np.arange(count)
    # Small values: sums and products stay exact in every type.
    values = (i + rank) % 2 + 1 if op == "prod" else (i * 7 + rank * 3) % 13 + 1
    return values.astype(dtype)


def expected(n, count, dtype, op):
    stack = np.stack([data(r, count, dtype, op).astype(np.float64) for r in range(n)]) if count else np.zeros((n, 0))
    reduce = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "avg": np.sum}[op]
    out = reduce(stack, axis=0)
    if op == "avg":
        out = np.trunc(out / n) if np.dtype(dtype).kind in "iu" else out / n  # ints: truncated, as NCCL
    return out.astype(dtype)


def check(got, want, what):
    if np.dtype(want.dtype).kind == "f" or want.dtype.name == "bfloat16":
        # AVG divides in the buffer's type: one rounding (bfloat16: 1/256).
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-2 if want.dtype.itemsize == 2 else 1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_allreduce_every_dtype_op_count(ranks, n):
    def body(comm):
        for dtype in DTYPES:
            for op, code in OPS.items():
                for count in COUNTS:
                    x = data(comm.rank, count, dtype, op)
                    out = np.zeros_like(x)
                    comm.allreduce(x, out, op=code)
                    check(out, expected(n, count, dtype, op), f"allreduce {dtype} {op} {count} n={n}")
                    np.testing.assert_array_equal(x, data(comm.rank, count, dtype, op), "the input changed")
                    comm.allreduce(x, op=code)  # in place
                    check(x, expected(n, count, dtype, op), f"allreduce in place {dtype} {op} {count}")

    ranks(n, body)


@pytest.mark.parametrize("n", [1, 3, 4])
def test_the_other_collectives(ranks, n):
    def body(comm):
        r = comm.rank
        for dtype in ["int32", "float16", "float64", "uint8"]:
            for count in COUNTS:
                root = n - 1
                buf = data(r, count, dtype, "sum") if r == root else np.zeros(count, dtype)
                comm.broadcast(buf, root=root)
                np.testing.assert_array_equal(buf, data(root, count, dtype, "sum"), f"broadcast {dtype} {count}")

                out = np.zeros(count, dtype)
                comm.reduce(data(r, count, dtype, "max"), out, op=coll.MAX, root=root)
                if r == root:
                    check(out, expected(n, count, dtype, "max"), f"reduce {dtype} {count}")

                gathered = np.zeros(count * n, dtype)
                comm.allgather(data(r, count, dtype, "sum"), gathered)
                want = np.concatenate([data(p, count, dtype, "sum") for p in range(n)])
                np.testing.assert_array_equal(gathered, want, f"allgather {dtype} {count}")

                mine = np.zeros(count, dtype)
                comm.reduce_scatter(np.tile(data(r, count, dtype, "sum"), n), mine)
                check(mine, expected(n, count, dtype, "sum"), f"reduce_scatter {dtype} {count}")

                send = np.concatenate([np.full(count, r * n + p, dtype) for p in range(n)])
                got = np.zeros_like(send)
                comm.alltoall(send, got)
                want = np.concatenate([np.full(count, p * n + r, dtype) for p in range(n)])
                np.testing.assert_array_equal(got, want, f"alltoall {dtype} {count}")
        comm.barrier()

    ranks(n, body)


def test_send_and_recv_in_a_ring_and_buffer_objects(ranks):
    def body(comm):
        n, r = comm.size, comm.rank
        out = bytearray(bytes([r]) * 4099)
        into = bytearray(4099)
        reqs = [comm.send(out, (r + 1) % n, async_op=True), comm.recv(into, (r - 1) % n, async_op=True)]
        for q in reqs:
            q.wait()
        assert into == bytearray(bytes([(r - 1) % n]) * 4099)

    ranks(3, body)


def test_bfloat16_through_torch(ranks):
    torch = pytest.importorskip("torch")

    def body(comm):
        # Small integers: every partial sum is exact in bfloat16, and /4 too.
        base = torch.arange(1025, dtype=torch.float32) % 13
        x = (base + comm.rank).to(torch.bfloat16)
        comm.allreduce(x, op=coll.AVG)
        assert torch.equal(x, (base + 1.5).to(torch.bfloat16))

    ranks(4, body)
