"""Lab-only debug modes of the shipped 051 kernels: time a part alone, stamp a timeline.

The shipped modules (kernels/ops/qkv_qknorm_backward/) take only modes whose results are right;
what is here calls their private launch functions with the switches the libraries keep for us:

- `streamnorm` (a stand-in for the ext_streamnorm module in check.py / oracle.py): its modes plus
  "dbg-gemm" (no norm kernel) and "dbg-norm" (no GEMM kernel): their results are WRONG, they
  time the parts; `timeline(mode=..., **inputs)` -> (outputs, norm [blocks, 4] int64: entry,
  exit, SM; gemm [grid, 12] int64: see csrc/cluster_gemm.h; 0 = not reached).
- `portable_norm_only(mode, **inputs)`: ext-portable's norm kernel and norm-weight sums alone
  (the GEMM outputs are WRONG), with the mode's block shape; `portable_check.py` times it for a
  mode "dbg-norm[-cN]".
"""

from __future__ import annotations

import types

from kernels.ops.qkv_qknorm_backward import ext_portable, ext_streamnorm
from kernels.ops.qkv_qknorm_backward.checks import aligned_inputs, check_inputs

STREAMNORM_DEBUG_FLAGS = {
    "dbg-gemm": ext_streamnorm.FLAG_PDL | ext_streamnorm.FLAG_NO_NORM,
    "dbg-norm": ext_streamnorm.FLAG_PDL | ext_streamnorm.FLAG_NO_GEMM,
}


def _streamnorm_call(mode: str, inputs: dict, timelines: tuple = ()):
    b, s = check_inputs(inputs, "cuda")
    outs = ext_streamnorm._new_outputs(inputs["hidden_states"])
    flags = STREAMNORM_DEBUG_FLAGS.get(mode)
    ext_streamnorm._launch(aligned_inputs(inputs), outs, b, s, "auto" if flags is not None else mode, timelines, flags)
    return outs


def streamnorm_qkv_qknorm_backward(*, mode: str = "auto", **inputs):
    return _streamnorm_call(mode, inputs)


def streamnorm_timeline(*, mode: str = "auto", **inputs):
    import torch

    b, s = check_inputs(inputs, "cuda")
    hs = inputs["hidden_states"]
    known = "auto" if mode in STREAMNORM_DEBUG_FLAGS else mode
    pl = ext_streamnorm.plan(b * s, ext_streamnorm._num_sms(hs.device), known)
    norm_tl = torch.zeros((pl["norm_blocks"], 4), dtype=torch.int64, device=hs.device)
    gemm_tl = torch.zeros((pl["grid"], 12), dtype=torch.int64, device=hs.device)
    return _streamnorm_call(mode, inputs, (norm_tl, gemm_tl)), norm_tl, gemm_tl


def _streamnorm_plan(tokens: int, num_sms: int = 132, mode: str = "auto") -> dict:
    return ext_streamnorm.plan(tokens, num_sms, "auto" if mode in STREAMNORM_DEBUG_FLAGS else mode)


# ext_streamnorm with the debug modes and timeline(): what check.py and oracle.py call as `impl`.
streamnorm = types.SimpleNamespace(
    **{name: getattr(ext_streamnorm, name) for name in ("load", "plan_with", "parse_mode", "LIBRARY", "qkv_qknorm_backward_out")},
    plan=_streamnorm_plan,
    qkv_qknorm_backward=streamnorm_qkv_qknorm_backward,
    timeline=streamnorm_timeline,
)


def portable_norm_only(*, mode: str = "serial", **inputs):
    """ext-portable's norm kernel and norm-weight sums alone, to time them: dX and dW are WRONG."""
    import torch

    from kernels.ops.qkv_qknorm_backward.definition import G_COLS, HIDDEN, INPUT_NAMES

    b, s = check_inputs(inputs, "cuda")
    hs = inputs["hidden_states"]
    dw = torch.empty((G_COLS, HIDDEN), dtype=hs.dtype, device=hs.device)
    dx = torch.empty_like(hs)
    dq = torch.empty(256, dtype=torch.float32, device=hs.device)
    dk = torch.empty(256, dtype=torch.float32, device=hs.device)
    ext_portable._run(dict(zip(INPUT_NAMES, aligned_inputs(inputs))), dx, (dw,), dq, dk, b, s, mode, norm_only=True)
    return dx, dw, dq, dk


def portable_call(mode: str):
    """A callable of ext-portable for `mode`; "dbg-norm[-cN]" is the norm alone (serial-cN)."""
    import functools

    if mode.startswith("dbg-norm"):
        return functools.partial(portable_norm_only, mode="serial" + mode.removeprefix("dbg-norm"))
    return functools.partial(ext_portable.qkv_qknorm_backward, mode=mode)
