"""ext-hybrid: the fastest measured path per token count. On sm_90 (H100, H200) ext-streamnorm's
wgmma kernels below STREAMNORM_BELOW tokens, where its single GEMM kernel beats two cuBLAS calls,
and ext-portable above, where cuBLAS's GEMMs (on two streams) beat its GEMM kernel; on every other
architecture ext-portable. The crossover is read off the side-by-side H200 runs in
kernels/BENCHMARKS.md.

Entry points as the others: qkv_qknorm_backward(**inputs, mode="auto") and
qkv_qknorm_backward_out(outputs, **inputs, mode="auto"); "auto" is the only mode.
"""

from __future__ import annotations

from typing import Any

from kernels.ops.qkv_qknorm_backward import ext_portable, ext_streamnorm
from kernels.ops.qkv_qknorm_backward.checks import infer_axes

STREAMNORM_BELOW = 3000  # tokens; between T = 2048 and T = 4096 on the H200 (BENCHMARKS.md)
ARCHITECTURES = ext_portable.ARCHITECTURES
_hopper: dict[Any, bool] = {}


def _is_hopper(device) -> bool:
    import torch

    if device not in _hopper:
        _hopper[device] = torch.cuda.get_device_capability(device) == (9, 0)
    return _hopper[device]


def _module(inputs: dict[str, Any], mode: str):
    if mode != "auto":
        raise ValueError(f"mode: ext-hybrid has only 'auto', got {mode!r}")
    b, s = infer_axes(inputs)
    device = inputs["hidden_states"].device
    if device.type == "cuda" and _is_hopper(device) and b * s < STREAMNORM_BELOW:
        return ext_streamnorm
    return ext_portable


def load(verbose: bool = False) -> None:
    """Build (or reuse) both libraries where both can run."""
    import torch

    ext_portable.load(verbose)
    if torch.cuda.get_device_capability() == (9, 0):
        ext_streamnorm.load(verbose)


def qkv_qknorm_backward(*, mode: str = "auto", **inputs):
    return _module(inputs, mode).qkv_qknorm_backward(**inputs)


def qkv_qknorm_backward_out(outputs, *, mode: str = "auto", **inputs) -> None:
    _module(inputs, mode).qkv_qknorm_backward_out(outputs, **inputs)
