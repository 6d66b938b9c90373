"""Compiling the CUDA sources for sm_90a with this machine's nvcc (no GPU needed), for the tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CSRC = Path(__file__).resolve().parents[2] / "kernels" / "ops" / "qkv_qknorm_backward" / "csrc"


def nvcc() -> str | None:
    for candidate in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def compile_sm90a(source: str, out_dir: Path) -> str:
    """Compile csrc/SOURCE to an object file (skip without nvcc); return ptxas's report. Fails when
    the compile fails or when ptxas serialized wgmma (performance warnings C7520 / C7510)."""
    compiler = nvcc()
    if compiler is None:
        pytest.skip("nvcc is not installed")
    obj = out_dir / (Path(source).stem + ".o")
    cmd = [
        compiler,
        "-std=c++17",
        "-O3",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-Xptxas",
        "-v",
        f"-I{CSRC}",
        "-c",
        str(CSRC / source),
        "-o",
        str(obj),
    ]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert obj.stat().st_size > 0
    log = out.stdout + out.stderr
    assert "C7520" not in log and "C7510" not in log, log[-3000:]
    return log


def spill_bytes(log: str) -> list[int]:
    """Spill stores per compiled kernel, from ptxas's report."""
    return [int(n) for n in re.findall(r"(\d+) bytes spill stores", log)]


def build_in(library, build_dir: Path):
    """Build an NvccLibrary under build_dir (KERNELINDEX_BUILD_DIR for the call; skip without
    nvcc), check that a second build reuses the file, and open it (ctypes.CDLL)."""
    if nvcc() is None:
        pytest.skip("nvcc is not installed")
    old = os.environ.get("KERNELINDEX_BUILD_DIR")
    os.environ["KERNELINDEX_BUILD_DIR"] = str(build_dir)
    try:
        path = library.build()
        assert path.exists() and path.parent == build_dir / library.name
        assert library.build() == path  # reused, not rebuilt
        return library.open()
    finally:
        if old is None:
            os.environ.pop("KERNELINDEX_BUILD_DIR", None)
        else:
            os.environ["KERNELINDEX_BUILD_DIR"] = old
