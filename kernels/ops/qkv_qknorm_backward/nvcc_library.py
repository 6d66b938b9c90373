"""The one loader of our CUDA libraries: nvcc builds their sources into a small shared library,
opened with ctypes and called with raw device pointers on torch's current stream.

The CUDA code has no torch headers: nvcc alone builds it in seconds (no torch extension build),
and a library built on a machine without a GPU can be carried to one. The library is named by a
digest of its sources, headers and flags, so a changed source never reuses a stale build; writes
are atomic, so concurrent builders each produce the same file.

    LIBRARY = NvccLibrary("kidx_x", (CSRC / "a.cu", CSRC / "b.cu"), (CSRC / "common/ptx.cuh",),
                          architectures=("sm_90",), declare=_declare)
    lib = LIBRARY.load()   # built once, opened once per process; RuntimeError off its GPUs
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CSRC = Path(__file__).resolve().parent / "csrc"
SM90A = "-gencode=arch=compute_90a,code=sm_90a"
BASE_FLAGS = ("-std=c++17", "-O3", SM90A, "-lineinfo", "-Xcompiler", "-fPIC", "-shared", "-cudart", "static")

_lock = threading.Lock()
_opened: dict[str, ctypes.CDLL] = {}


def build_root() -> Path:
    return Path(os.environ.get("KERNELINDEX_BUILD_DIR", Path.home() / ".cache" / "kernelindex"))


def nvcc_path() -> str:
    candidates = [os.environ.get("NVCC"), shutil.which("nvcc")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(str(Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for c in candidates:
        if c and os.path.exists(c):
            return c
    raise RuntimeError("nvcc not found (set CUDA_HOME or NVCC) to build the kernel library")


@dataclass(frozen=True)
class NvccLibrary:
    name: str                                  # library stem and build folder name
    sources: Path | tuple[Path, ...]           # the .cu translation units
    headers: tuple[Path, ...] = ()             # every file they include (in the build's digest)
    flags: tuple[str, ...] = BASE_FLAGS
    architectures: tuple[str, ...] = ("sm_90",)  # devices load() accepts, "sm_<major><minor>"
    declare: Callable[[ctypes.CDLL], None] | None = None  # sets argtypes/restype once opened

    def __post_init__(self):
        if isinstance(self.sources, Path):
            object.__setattr__(self, "sources", (self.sources,))

    def files(self) -> list[Path]:
        return [*self.sources, *self.headers]

    def digest(self) -> str:
        h = hashlib.sha256()
        for path in self.files():
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        h.update(" ".join(self.flags).encode())
        return h.hexdigest()[:16]

    def path(self) -> Path:
        """Where the library for the current sources lives (built or not)."""
        return build_root() / self.name / f"lib{self.name}_{self.digest()}.so"

    def build(self, verbose: bool = False) -> Path:
        """Compile the library unless the current sources already have a build; return its path."""
        out = self.path()
        if out.exists():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=out.stem + ".", suffix=".so.tmp", dir=out.parent)
        os.close(fd)
        cmd = [nvcc_path(), *self.flags, f"-I{CSRC}", *map(str, self.sources), "-o", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if verbose:
            print(" ".join(cmd), proc.stdout, proc.stderr, sep="\n")
        if proc.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"{self.name}: nvcc failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        os.replace(tmp, out)
        return out

    def open(self, verbose: bool = False) -> ctypes.CDLL:
        """Build if needed and load (no GPU needed); a build from elsewhere that does not load here
        is rebuilt."""
        path = self.build(verbose)
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            path.unlink(missing_ok=True)
            lib = ctypes.CDLL(str(self.build(verbose)))
        if self.declare is not None:
            self.declare(lib)
        return lib

    def load(self, verbose: bool = False) -> ctypes.CDLL:
        """The opened library for this process, after checking that the current CUDA device is one
        it is built for."""
        with _lock:
            if self.name in _opened:
                return _opened[self.name]
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError(f"{self.name} needs a CUDA device")
            major, minor = torch.cuda.get_device_capability()
            if f"sm_{major}{minor}" not in self.architectures:
                raise RuntimeError(f"{self.name} is built for {', '.join(self.architectures)}; this device is sm_{major}{minor}")
            _opened[self.name] = self.open(verbose)
            return _opened[self.name]
