"""libcoll through ctypes: the C ABI of coll.h, loaded once.

ctypes releases the GIL for the length of every call into the library, so
other Python threads run while coll works.
"""
import ctypes
import ctypes.util
import os
import pathlib

UNIQUE_ID_BYTES = 128


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class Config(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("timeout_ms", ctypes.c_int), ("init_timeout_ms", ctypes.c_int)]


def _candidates():
    """Where libcoll may be, in order: COLL_LIBRARY, next to this package
    (a wheel that bundles it), the build tree of a source checkout, then the
    system's loader path (an installed coll)."""
    if os.environ.get("COLL_LIBRARY"):
        yield os.environ["COLL_LIBRARY"]
        return
    here = pathlib.Path(__file__).resolve().parent
    for path in (here / "libcoll.so.0", here.parent.parent / "build" / "src" / "libcoll.so.0"):
        if path.exists():
            yield str(path)
    found = ctypes.util.find_library("coll")
    if found:
        yield found
    yield "libcoll.so.0"


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
    raise ImportError(
        "coll: cannot load libcoll ("
        + "; ".join(tried)
        + "): build it (make build), install it (cmake --install build), or set COLL_LIBRARY to its path"
    )


lib = _load()

_c = ctypes
_vp, _sz, _int = _c.c_void_p, _c.c_size_t, _c.c_int
_comm, _req = _c.c_void_p, _c.c_void_p
_decl = {
    "coll_get_version": [_c.POINTER(_int)],
    "coll_get_unique_id": [_c.POINTER(UniqueId)],
    "coll_comm_init_rank_config": [_c.POINTER(_comm), _int, UniqueId, _int, _c.POINTER(Config)],
    "coll_comm_init_from_env": [_c.POINTER(_comm)],
    "coll_comm_destroy": [_comm],
    "coll_comm_abort": [_comm],
    "coll_comm_revoke": [_comm],
    "coll_comm_agree": [_comm, _c.POINTER(_int), _c.POINTER(_int), _c.POINTER(_int)],
    "coll_comm_get_async_error": [_comm, _c.POINTER(_int)],
    "coll_comm_rank": [_comm, _c.POINTER(_int)],
    "coll_comm_size": [_comm, _c.POINTER(_int)],
    "coll_comm_split": [_comm, _int, _int, _c.POINTER(_comm)],
    "coll_comm_shrink": [_comm, _c.POINTER(_int), _int, _c.POINTER(_comm)],
    "coll_comm_grow": [_comm, _int, _c.POINTER(UniqueId), _c.POINTER(_comm)],
    "coll_allreduce_async": [_vp, _vp, _sz, _int, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_broadcast_async": [_vp, _sz, _int, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_reduce_async": [_vp, _vp, _sz, _int, _int, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_allgather_async": [_vp, _vp, _sz, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_reduce_scatter_async": [_vp, _vp, _sz, _int, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_alltoall_async": [_vp, _vp, _sz, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_send_async": [_vp, _sz, _int, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_recv_async": [_vp, _sz, _int, _int, _comm, _vp, _c.POINTER(_req)],
    "coll_barrier_async": [_comm, _c.POINTER(_req)],
    "coll_allreduce": [_vp, _vp, _sz, _int, _int, _comm, _vp],
    "coll_broadcast": [_vp, _sz, _int, _int, _comm, _vp],
    "coll_reduce": [_vp, _vp, _sz, _int, _int, _int, _comm, _vp],
    "coll_allgather": [_vp, _vp, _sz, _int, _comm, _vp],
    "coll_reduce_scatter": [_vp, _vp, _sz, _int, _int, _comm, _vp],
    "coll_alltoall": [_vp, _vp, _sz, _int, _comm, _vp],
    "coll_send": [_vp, _sz, _int, _int, _comm, _vp],
    "coll_recv": [_vp, _sz, _int, _int, _comm, _vp],
    "coll_barrier": [_comm],
    "coll_wait": [_req],
    "coll_test": [_req],
}
for _name, _args in _decl.items():
    _f = getattr(lib, _name)
    _f.argtypes = _args
    _f.restype = _int
lib.coll_get_error_string.argtypes = [_int]
lib.coll_get_error_string.restype = _c.c_char_p
lib.coll_get_last_error.argtypes = [_comm]
lib.coll_get_last_error.restype = _c.c_char_p
