"""What coll needs of a buffer: its address, element count and datatype.

From NumPy arrays, any object with the buffer protocol (through NumPy,
without a copy) and torch tensors (CPU, or CUDA with the tensor's current
stream). Buffers must be contiguous; the check says which argument is not.
"""
from . import _errors

INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = range(10)
NAMES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"]
SIZES = [1, 1, 4, 4, 8, 8, 2, 2, 4, 8]
# NumPy has no bfloat16; ml_dtypes' is accepted under its name.
_BY_NAME = {name: code for code, name in enumerate(NAMES)}


class View:
    """A buffer as coll sees it; `keep` holds the object alive while an operation runs."""

    __slots__ = ("address", "count", "dtype", "nbytes", "keep", "stream", "what")

    def __init__(self, address, count, dtype, keep, stream, what):
        self.address, self.count, self.dtype, self.keep, self.stream, self.what = (
            address, count, dtype, keep, stream, what)
        self.nbytes = count * SIZES[dtype]


def _bad(what, why):
    raise _errors.InvalidArgument(_errors.INVALID_ARGUMENT, f"{what}: {why}")


def is_tensor(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def _tensor(obj, what, writable):
    if not obj.is_contiguous():
        _bad(what, "a non-contiguous tensor (pass tensor.contiguous(), and copy the result back)")
    name = str(obj.dtype).replace("torch.", "")
    if name not in _BY_NAME:
        _bad(what, f"dtype {obj.dtype} is not one coll reduces ({', '.join(NAMES)})")
    stream = None
    if obj.device.type == "cuda":
        import torch

        stream = torch.cuda.current_stream(obj.device).cuda_stream
    elif obj.device.type != "cpu":
        _bad(what, f"a tensor on {obj.device}: coll takes CPU and CUDA tensors")
    return View(obj.data_ptr(), obj.numel(), _BY_NAME[name], obj, stream, what)


def view(obj, what, writable=True):
    """The View of `obj`; InvalidArgument naming `what` when coll cannot use it."""
    if is_tensor(obj):
        return _tensor(obj, what, writable)
    import numpy as np

    if isinstance(obj, np.generic) and writable:  # np.asarray would copy it: coll would write into the copy
        _bad(what, f"a NumPy scalar ({type(obj).__name__}) cannot hold the result (pass numpy.array([x]))")
    if not isinstance(obj, np.ndarray):  # (ml_dtypes' bfloat16 arrays have no buffer of their own)
        try:
            memoryview(obj)
        except TypeError:
            _bad(what, f"a {type(obj).__name__} has no buffer (pass a NumPy array, a torch tensor, or a bytearray)")
    arr = np.asarray(obj)
    if not arr.flags.c_contiguous:
        _bad(what, "not contiguous (pass numpy.ascontiguousarray(x), and copy the result back)")
    if writable and not arr.flags.writeable:
        _bad(what, "read-only, but coll writes the result into it")
    if not arr.dtype.isnative:
        _bad(what, f"dtype {arr.dtype.str} is not in this machine's byte order (pass x.astype(x.dtype.newbyteorder('='))"
             ", and copy the result back)")
    name = arr.dtype.name
    if name not in _BY_NAME:
        _bad(what, f"dtype {arr.dtype} is not one coll reduces ({', '.join(NAMES)})")
    return View(arr.ctypes.data, arr.size, _BY_NAME[name], (obj, arr), None, what)


def same_type(a, b):
    if a.dtype != b.dtype:
        _bad(b.what, f"dtype {NAMES[b.dtype]}, but {a.what} is {NAMES[a.dtype]}: they must be one type")
    if (a.stream is None) != (b.stream is None):
        _bad(b.what, f"{a.what} and {b.what} must both be on the CPU or both on the GPU")
