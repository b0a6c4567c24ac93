"""coll.Communicator: the collectives of coll.h on NumPy arrays, buffer
objects and torch tensors, blocking or not (async_op=True gives a Request)."""
import ctypes
import threading

from . import _errors
from ._buffers import same_type, view
from ._lib import Config, UniqueId, lib
from ._ops import SUM, op_code

SPLIT_NOCOLOR = -1


def _message(handle):
    text = lib.coll_get_last_error(handle)
    return text.decode(errors="replace") if text else ""


def _c_int(value, what):
    """value as a C int, which ctypes would wrap silently: root 2**32 became root 0."""
    number = int(value)
    if not -2**31 <= number < 2**31:
        raise _errors.InvalidArgument(_errors.INVALID_ARGUMENT, f"{what}: {value} does not fit a C int")
    return number


def _raise_for(result, message):
    """Raises result's error with message (coll's own wording of the code where there is none)."""
    if result != _errors.SUCCESS:
        _errors.raise_for(result, message or lib.coll_get_error_string(result).decode())


def _check(result, handle=None):
    if result != _errors.SUCCESS:
        _raise_for(result, _message(handle))


def unique_id():
    """A new job identity (128 bytes) and, in this process, the bootstrap
    store the ranks meet at: keep this process alive until every rank has
    joined. Pass the bytes to every rank (a file, an environment variable,
    MPI); anyone holding them can join the job."""
    uid = UniqueId()
    _check(lib.coll_get_unique_id(ctypes.byref(uid)))
    return bytes(uid)  # all 128 bytes (the array's value would stop at a zero)


class Request:
    """A non-blocking operation. Its buffers stay in use until wait() returns
    or test() says True; every request must be completed one of the two ways.
    Once completed, wait() and test() give the same outcome again (its failure
    too); from several threads, test() says False while another waits."""

    def __init__(self, comm, handle, keep):
        self._comm, self._handle, self._keep = comm, handle, keep
        self._lock = threading.Lock()
        self._outcome = None  # (result, message) once coll released the request

    def _complete(self, result):
        self._outcome = (result, _message(self._comm._handle) if result != _errors.SUCCESS else "")
        self._keep = ()  # the buffers are no longer in use


    def wait(self):
        """Blocks until the operation completes; raises its failure."""
        with self._lock:
            if self._outcome is None:
                self._complete(lib.coll_wait(self._handle))
        _raise_for(*self._outcome)

    def test(self):
        """True once the operation completed (raising its failure), False while it runs."""
        if self._outcome is None:  # once set, it stays
            if not self._lock.acquire(blocking=False):
                return False  # another thread waits for it
            try:
                if self._outcome is None:
                    result = lib.coll_test(self._handle)
                    if result == _errors.IN_PROGRESS:
                        return False
                    self._complete(result)
            finally:
                self._lock.release()
        _raise_for(*self._outcome)
        return True

    def __del__(self):
        if getattr(self, "_outcome", True) is None and self._handle is not None:
            lib.coll_wait(self._handle)  # released, and the buffers no longer in use


class Communicator:
    """One rank's membership of a group. Communicator(nranks, uid, rank)
    joins the job named by `uid` (unique_id()) as `rank`; coll.init() joins
    from the launcher's environment. `timeout_ms` bounds every wait for a peer
    (0: COLL_TIMEOUT_MS)."""

    def __init__(self, nranks, uid, rank, timeout_ms=0):
        if not isinstance(uid, (bytes, bytearray)) or len(uid) != ctypes.sizeof(UniqueId):
            raise _errors.InvalidArgument(_errors.INVALID_ARGUMENT, "uid: the 128 bytes of coll.unique_id()")
        handle = ctypes.c_void_p()
        config = Config(ctypes.sizeof(Config), _c_int(timeout_ms, "timeout_ms"), 0)
        _check(lib.coll_comm_init_rank_config(ctypes.byref(handle), _c_int(nranks, "nranks"),
                                              UniqueId.from_buffer_copy(bytes(uid)), _c_int(rank, "rank"),
                                              ctypes.byref(config)))
        self._handle = handle

    @classmethod
    def _adopt(cls, handle):
        comm = cls.__new__(cls)
        comm._handle = handle
        return comm

    @property
    def rank(self):
        out = ctypes.c_int()
        _check(lib.coll_comm_rank(self._handle, ctypes.byref(out)), self._handle)
        return out.value

    @property
    def size(self):
        out = ctypes.c_int()
        _check(lib.coll_comm_size(self._handle, ctypes.byref(out)), self._handle)
        return out.value

    def _run(self, name, args, keep, async_op):
        if async_op:
            request = ctypes.c_void_p()
            _check(getattr(lib, name + "_async")(*args, ctypes.byref(request)), self._handle)
            return Request(self, request, keep)
        _check(getattr(lib, name)(*args), self._handle)
        return None

    def _pair(self, send, recv):
        s = view(send, "send", writable=recv is None)
        r = view(recv, "recv") if recv is not None else s
        same_type(s, r)
        return s, r

    def _counts(self, r, want, what):
        if r.count != want:
            raise _errors.InvalidArgument(_errors.INVALID_ARGUMENT,
                                          f"{r.what}: {r.count} elements, but {what} needs {want}")

    def allreduce(self, send, recv=None, op=SUM, async_op=False):
        """recv = op over every rank's send (in place without recv). Returns
        the output, or a Request with async_op."""
        s, r = self._pair(send, recv)
        self._counts(r, s.count, "an allreduce of send")
        req = self._run("coll_allreduce", (s.address, r.address, s.count, s.dtype, op_code(op), self._handle, s.stream),
                        (s, r), async_op)
        return req if async_op else (recv if recv is not None else send)

    def broadcast(self, buf, root=0, async_op=False):
        """buf on every rank = buf on `root`."""
        b = view(buf, "buf")
        req = self._run("coll_broadcast", (b.address, b.count, b.dtype, _c_int(root, "root"), self._handle, b.stream),
                        (b,), async_op)
        return req if async_op else buf

    def reduce(self, send, recv=None, op=SUM, root=0, async_op=False):
        """recv on `root` = op over every rank's send (in place without recv);
        recv is not used elsewhere."""
        s, r = self._pair(send, recv)
        self._counts(r, s.count, "a reduce of send")
        req = self._run("coll_reduce",
                        (s.address, r.address, s.count, s.dtype, op_code(op), _c_int(root, "root"), self._handle,
                         s.stream),
                        (s, r), async_op)
        return req if async_op else (recv if recv is not None else send)

    def allgather(self, send, recv, async_op=False):
        """recv = every rank's send, in rank order (size times as long)."""
        s, r = self._pair(send, recv)
        self._counts(r, s.count * self.size, "an allgather of send")
        req = self._run("coll_allgather", (s.address, r.address, s.count, s.dtype, self._handle, s.stream),
                        (s, r), async_op)
        return req if async_op else recv

    def reduce_scatter(self, send, recv, op=SUM, async_op=False):
        """send holds size blocks as long as recv; recv on rank r = op over every rank's block r."""
        s, r = self._pair(send, recv)
        self._counts(s, r.count * self.size, "a reduce_scatter into recv")
        req = self._run("coll_reduce_scatter",
                        (s.address, r.address, r.count, s.dtype, op_code(op), self._handle, s.stream), (s, r),
                        async_op)
        return req if async_op else recv

    def alltoall(self, send, recv, async_op=False):
        """Block p of send goes to rank p; block p of recv comes from rank p."""
        s, r = self._pair(send, recv)
        self._counts(r, s.count, "an alltoall of send")
        n = self.size
        if s.count % n:
            raise _errors.InvalidArgument(_errors.INVALID_ARGUMENT,
                                          f"send: {s.count} elements do not split into {n} equal blocks")
        req = self._run("coll_alltoall", (s.address, r.address, s.count // n, s.dtype, self._handle, s.stream),
                        (s, r), async_op)
        return req if async_op else recv

    def send(self, buf, peer, async_op=False):
        """buf to rank `peer`; matched in order with its recv there."""
        b = view(buf, "buf", writable=False)
        return self._run("coll_send", (b.address, b.count, b.dtype, _c_int(peer, "peer"), self._handle, b.stream),
                         (b,), async_op)

    def recv(self, buf, peer, async_op=False):
        """buf = the next message from rank `peer` (its count and dtype must match)."""
        b = view(buf, "buf")
        req = self._run("coll_recv", (b.address, b.count, b.dtype, _c_int(peer, "peer"), self._handle, b.stream),
                        (b,), async_op)
        return req if async_op else buf

    def barrier(self, async_op=False):
        if async_op:
            request = ctypes.c_void_p()
            _check(lib.coll_barrier_async(self._handle, ctypes.byref(request)), self._handle)
            return Request(self, request, ())
        _check(lib.coll_barrier(self._handle), self._handle)
        return None

    def split(self, color, key=0):
        """A new communicator of the ranks with the same color, ordered by
        key then rank; color None leaves this rank out (returns None)."""
        handle = ctypes.c_void_p()
        color = SPLIT_NOCOLOR if color is None else _c_int(color, "color")
        _check(lib.coll_comm_split(self._handle, color, _c_int(key, "key"), ctypes.byref(handle)), self._handle)
        return Communicator._adopt(handle) if handle.value else None

    def shrink(self, exclude=()):
        """The survivors' communicator without the ranks in `exclude` (and
        any found dead); every survivor calls it."""
        ranks = (ctypes.c_int * len(exclude))(*exclude)
        handle = ctypes.c_void_p()
        _check(lib.coll_comm_shrink(self._handle, ranks, len(exclude), ctypes.byref(handle)), self._handle)
        return Communicator._adopt(handle)

    def grow(self, nnew, uid=None):
        """Every member calls it: with `nnew` new ranks, which joined with
        Communicator(size + nnew, uid, r) for r from size on, a new
        communicator, the members first in their order. `uid` (from
        coll.unique_id() on rank 0, given to the new ranks) is read on rank
        0 only."""
        handle = ctypes.c_void_p()
        ref = None
        if uid is not None:
            if not isinstance(uid, (bytes, bytearray)) or len(uid) != ctypes.sizeof(UniqueId):
                raise _errors.InvalidArgument(_errors.INVALID_ARGUMENT, "uid: the 128 bytes of coll.unique_id()")
            ref = ctypes.byref(UniqueId.from_buffer_copy(bytes(uid)))
        _check(lib.coll_comm_grow(self._handle, _c_int(nnew, "nnew"), ref, ctypes.byref(handle)), self._handle)
        return Communicator._adopt(handle)

    def agree(self, flag):
        """As ULFM's MPI_Comm_agree: every live rank calls it, also after a
        failure; returns (the bitwise AND of the flags of the ranks that
        took part, the list of ranks gone), the same on every rank."""
        flag_in = ctypes.c_int(_c_int(flag, "flag"))
        gone = (ctypes.c_int * self.size)()
        ngone = ctypes.c_int()
        _check(lib.coll_comm_agree(self._handle, ctypes.byref(flag_in), gone, ctypes.byref(ngone)), self._handle)
        return flag_in.value, list(gone[:ngone.value])

    def async_error(self):
        """The failure found in the background (a coll.Error), or None."""
        out = ctypes.c_int()
        _check(lib.coll_comm_get_async_error(self._handle, ctypes.byref(out)), self._handle)
        if out.value == _errors.SUCCESS:
            return None
        try:
            _check(out.value, self._handle)
        except _errors.Error as e:
            return e

    def abort(self):
        """Fails every pending and later operation here, and makes peers
        that wait on this rank fail instead of waiting out their timeouts."""
        _check(lib.coll_comm_abort(self._handle), self._handle)

    def revoke(self):
        """As abort, but every rank's pending and later operations raise
        coll.Revoked, as ULFM's MPI_Comm_revoke: shrink() is what follows."""
        _check(lib.coll_comm_revoke(self._handle), self._handle)

    def destroy(self):
        if self._handle is not None and self._handle.value:
            # Refused while another thread is inside a call: the handle stays, to abort and destroy again.
            _check(lib.coll_comm_destroy(self._handle), self._handle)
            self._handle = None

    close = destroy

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and self._handle.value:
            lib.coll_comm_destroy(self._handle)


def init():
    """This rank's communicator from the launcher's environment: collrun,
    torchrun, Open MPI or Slurm (as coll_comm_init_from_env). A spare
    (collrun --spares) waits here until a communicator grows, and returns
    the grown one."""
    handle = ctypes.c_void_p()
    _check(lib.coll_comm_init_from_env(ctypes.byref(handle)))
    return Communicator._adopt(handle)


def from_mpi4py(comm, timeout_ms=0):
    """A coll communicator of the ranks of an mpi4py communicator, in its
    order: rank 0 makes the job identity and broadcasts it over MPI."""
    uid = unique_id() if comm.Get_rank() == 0 else None
    uid = comm.bcast(uid, root=0)
    return Communicator(comm.Get_size(), uid, comm.Get_rank(), timeout_ms=timeout_ms)
