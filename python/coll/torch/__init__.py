"""coll as a torch.distributed backend, and a DDP comm hook.

    import coll.torch                       # registers the backend "coll"
    torch.distributed.init_process_group("coll", init_method="env://")

The backend is a C++ extension (backend.cpp, a c10d::Backend over coll's
C API), compiled against the installed torch on first import with
torch.utils.cpp_extension and cached (TORCH_EXTENSIONS_DIR). It is
registered for CPU tensors. Each group (the default one, new_group's) gets
a communicator of its own, joined through the group's store.
"""
import os
import pathlib
import queue
import threading

import torch
import torch.distributed as dist
from torch.utils.cpp_extension import load

from .._lib import lib as _lib

_HERE = pathlib.Path(__file__).resolve().parent


def _include_dir():
    """coll.h: COLL_INCLUDE, the package's copy (an installed wheel), or the source tree's."""
    for d in (os.environ.get("COLL_INCLUDE"), _HERE.parent / "include", _HERE.parents[2] / "include"):
        if d and (pathlib.Path(d) / "coll" / "coll.h").exists():
            return str(d)
    raise ImportError("coll.torch: coll.h not found: set COLL_INCLUDE to the folder that holds coll/coll.h")


def _library():
    """The libcoll the coll package loaded, so that both use one library."""
    path = pathlib.Path(_lib._name)
    if path.is_absolute():
        return path
    for line in pathlib.Path("/proc/self/maps").read_text().splitlines():  # found by the loader: where?
        if "/libcoll.so" in line:
            return pathlib.Path(line.split()[-1])
    raise ImportError(f"coll.torch: cannot tell where {_lib._name} was loaded from: set COLL_LIBRARY")


def _build():
    lib = _library()
    return load(
        name="coll_torch_backend",
        sources=[str(_HERE / "backend.cpp")],
        extra_include_paths=[_include_dir()],
        extra_ldflags=[f"-L{lib.parent}", f"-l:{lib.name}", f"-Wl,-rpath,{lib.parent}"],
        verbose=os.environ.get("COLL_TORCH_VERBOSE") == "1",
    )


_ext = _build()


def _create(store, rank, size, timeout):
    return _ext.create_backend(store, rank, size, timeout)


dist.Backend.register_backend("coll", _create, devices=["cpu"])


# --- the DDP comm hook ---------------------------------------------------

class _Waiter:
    """Completes torch futures as coll requests finish, in issue order (one
    thread for every hook call, as coll completes them in that order)."""

    def __init__(self):
        self._q = queue.Queue()
        threading.Thread(target=self._run, daemon=True, name="coll-hook").start()

    def _run(self):
        while True:
            req, fut, value = self._q.get()
            try:
                req.wait()
                fut.set_result(value)
            except Exception as e:  # noqa: BLE001 (handed to whoever waits on the future)
                fut.set_exception(e)

    def add(self, req, value):
        fut = torch.futures.Future()
        self._q.put((req, fut, value))
        return fut


_waiter = None


def allreduce_hook(comm, bucket):
    """A DDP comm hook that averages the gradient bucket over `comm` (a
    coll.Communicator), for a model whose process group is another backend:
    model.register_comm_hook(comm, coll.torch.allreduce_hook). The bucket's
    buffer is taken anew at every call (DDP rebuilds buckets after the
    first iteration)."""
    global _waiter
    if _waiter is None:
        _waiter = _Waiter()
    t = bucket.buffer()
    t.div_(comm.size)
    return _waiter.add(comm.allreduce(t, async_op=True), t)


__all__ = ["allreduce_hook"]
