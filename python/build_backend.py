"""A PEP 517 build backend of our own, so that `pip install ./python` needs
no package index (setuptools would be fetched from one, and the one in a
fresh virtual environment cannot build wheels by itself): the wheel is the
coll/ folder and its metadata, with coll.h and, where the checkout has
been built (make build; or COLL_BUILD_DIR names the build folder), that
libcoll, so that the installed package finds its library by itself."""
import base64
import hashlib
import pathlib
import tarfile
import zipfile

NAME, VERSION = "coll", "0.1.0"
HERE = pathlib.Path(__file__).resolve().parent
METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: coll collective communication from Python: NumPy, buffers, torch tensors, a torch.distributed backend
Requires-Python: >=3.9
Requires-Dist: numpy
"""


def _wheel_info(platform):
    pure = platform == "any"
    return f"""Wheel-Version: 1.0
Generator: coll build_backend
Root-Is-Purelib: {"true" if pure else "false"}
Tag: py3-none-{platform}
"""


def _built_library():
    import os
    import sysconfig

    build = pathlib.Path(os.environ.get("COLL_BUILD_DIR") or HERE.parent / "build")
    lib = build / "src" / "libcoll.so.0"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return (lib, platform) if lib.exists() else (None, "any")


def _files():
    return sorted(p for p in (HERE / NAME).rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    library, platform = _built_library()
    wheel = f"{NAME}-{VERSION}-py3-none-{platform}.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    records = []
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as z:
        entries = [(p.relative_to(HERE).as_posix(), p.read_bytes()) for p in _files()]
        # coll.h, for coll.torch's extension, which compiles against it on first import.
        header = HERE.parent / "include" / "coll" / "coll.h"
        if header.exists():
            entries.append((f"{NAME}/include/coll/coll.h", header.read_bytes()))
        if library:
            entries.append((f"{NAME}/libcoll.so.0", library.read_bytes()))
        entries += [(f"{info}/METADATA", METADATA.encode()), (f"{info}/WHEEL", _wheel_info(platform).encode())]
        for name, data in entries:
            z.writestr(name, data)
            records.append(_record_line(name, data))
        records.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    sdist = f"{NAME}-{VERSION}.tar.gz"
    with tarfile.open(pathlib.Path(sdist_directory) / sdist, "w:gz") as t:
        for p in _files() + [HERE / "pyproject.toml", HERE / "build_backend.py"]:
            t.add(p, arcname=f"{NAME}-{VERSION}/{p.relative_to(HERE).as_posix()}")
    return sdist
