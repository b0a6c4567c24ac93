"""coll from Python: `import coll`.

    comm = coll.init()                        # from collrun, torchrun, mpirun or srun
    x = numpy.ones(1 << 20, dtype=numpy.float32)
    comm.allreduce(x)                         # in place, sum over the ranks
    req = comm.allreduce(x, op=coll.MAX, async_op=True)
    ...                                       # compute while it runs
    req.wait()

Every collective takes NumPy arrays, any object with the buffer protocol,
and torch tensors; failures raise coll.Error subclasses with coll's message.
`import coll.torch` registers coll as a torch.distributed backend.
"""
from ._buffers import BFLOAT16, FLOAT16, FLOAT32, FLOAT64, INT8, INT32, INT64, UINT8, UINT32, UINT64
from ._comm import Communicator, Request, from_mpi4py, init, unique_id
from ._errors import (Error, InternalError, InvalidArgument, InvalidUsage, RemoteError, Revoked, SystemError,
                      TimeoutError)
from ._lib import lib as _lib
from ._ops import AVG, MAX, MIN, PROD, SUM


def version():
    """The loaded library's version code (COLL_VERSION_CODE)."""
    import ctypes

    out = ctypes.c_int()
    _lib.coll_get_version(ctypes.byref(out))
    return out.value


__all__ = [
    "Communicator", "Request", "init", "unique_id", "from_mpi4py", "version",
    "Error", "InvalidArgument", "InvalidUsage", "SystemError", "RemoteError", "TimeoutError", "InternalError",
    "Revoked",
    "SUM", "PROD", "MIN", "MAX", "AVG",
    "INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64",
]
