"""Build a CUDA source into a small shared library with nvcc, and open it with ctypes.

For extensions whose CUDA code has no torch headers: nvcc alone builds them in seconds (no torch
extension build), and a library built on a machine without a GPU can be carried to one. The library
is named by a digest of its sources and flags, so a changed source never reuses a stale build;
writes are atomic, so concurrent builders each produce the same file.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

BASE_FLAGS = (
    "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-lineinfo",
    "-Xcompiler", "-fPIC", "-shared", "-cudart", "static",
)


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
    name: str                 # library stem and build folder name
    source: Path              # the one .cu translation unit
    headers: tuple[Path, ...] = ()
    flags: tuple[str, ...] = BASE_FLAGS

    def files(self) -> list[Path]:
        return [self.source, *self.headers]

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
        cmd = [nvcc_path(), *self.flags, f"-I{self.source.parent}", str(self.source), "-o", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if verbose:
            print(" ".join(cmd), proc.stdout, proc.stderr, sep="\n")
        if proc.returncode != 0:
            os.unlink(tmp)
            raise RuntimeError(f"{self.name}: nvcc failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        os.replace(tmp, out)
        return out

    def open(self, verbose: bool = False) -> ctypes.CDLL:
        """Build if needed and load; a build from elsewhere that does not load here is rebuilt."""
        path = self.build(verbose)
        try:
            return ctypes.CDLL(str(path))
        except OSError:
            path.unlink(missing_ok=True)
            return ctypes.CDLL(str(self.build(verbose)))
