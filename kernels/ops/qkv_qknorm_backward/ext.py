"""Our CUDA extension (sm_90a), built on first use with torch.utils.cpp_extension.load.

Entry points (arguments are checked here, in Python, before any kernel runs):
  qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs (definition order)
  qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None (destination passing)

Modes: "auto" (norm kernel + persistent wgmma GEMM, tile size chosen by the planner),
"wgmma128" / "wgmma256" (tile rows forced), "cublas" (norm kernel + cuBLAS GEMMs; the fallback).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from kernels.ops.qkv_qknorm_backward.checks import check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.definition import INPUT_NAMES

CSRC = Path(__file__).resolve().parent / "csrc"
SOURCES = ["binding.cpp", "norm_backward.cu", "gemm_sm90.cu"]
HEADERS = ["launch.h", "sm90_ptx.cuh"]
MODES = {"cublas": 0, "auto": 1, "wgmma128": 2, "wgmma256": 3}
NVCC_FLAGS = ["-O3", "-gencode=arch=compute_90a,code=sm_90a", "-lineinfo"]

_lock = threading.Lock()
_module = None


def source_files() -> list[Path]:
    return [CSRC / name for name in SOURCES + HEADERS]


def load(verbose: bool = False):
    """Build (or reuse the cached build of) the extension and return the module."""
    global _module
    with _lock:
        if _module is not None:
            return _module
        import torch
        from torch.utils.cpp_extension import load as cpp_load

        if not torch.cuda.is_available():
            raise RuntimeError("the qkv_qknorm_backward extension needs a CUDA device")
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            raise RuntimeError(f"the extension is built for sm_90a; this device is sm_{major}{minor}")
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
        build_dir = Path(os.environ.get("KERNELINDEX_BUILD_DIR", Path.home() / ".cache" / "kernelindex"))
        build_dir = build_dir / "qkv_qknorm_backward"
        build_dir.mkdir(parents=True, exist_ok=True)
        _module = cpp_load(
            name="kernelindex_qkv_qknorm_backward",
            sources=[str(CSRC / s) for s in SOURCES],
            extra_cflags=["-O3"],
            extra_cuda_cflags=NVCC_FLAGS,
            extra_include_paths=[str(CSRC)],
            build_directory=str(build_dir),
            verbose=verbose,
        )
        return _module


def _aligned(inputs: dict[str, Any]) -> list[Any]:
    # The kernels use 16-byte loads and TMA: copy a tensor whose address is not 16-byte aligned.
    out = []
    for name in INPUT_NAMES:
        t = inputs[name]
        out.append(t if t.data_ptr() % 16 == 0 else t.clone())
    return out


def _mode(mode: str) -> int:
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {sorted(MODES)}, got {mode!r}")
    return MODES[mode]


def qkv_qknorm_backward(*, mode: str = "auto", **inputs):
    check_inputs(inputs, "cuda")
    m = _mode(mode)
    return tuple(load().forward(*_aligned(inputs), m))


def qkv_qknorm_backward_out(outputs, *, mode: str = "auto", **inputs) -> None:
    b, s = check_inputs(inputs, "cuda")
    check_outputs(outputs, b, s, inputs["hidden_states"].device)
    for name, t in zip(("grad_hidden_states", "grad_q_weight", "grad_k_weight", "grad_v_weight",
                        "grad_q_norm_weight", "grad_k_norm_weight"), outputs):
        if t.data_ptr() % 16 != 0:
            raise ValueError(f"{name}: output address must be 16-byte aligned")
    m = _mode(mode)
    load().forward_out(*_aligned(inputs), *outputs, m)


def plan(tokens: int, num_sms: int = 132, bm: int = 0) -> dict[str, float]:
    return dict(load().plan(tokens, num_sms, bm))
