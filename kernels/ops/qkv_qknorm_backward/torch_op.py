"""The torch extension of operation 051: two custom ops registered with `torch.library`.

    torch.ops.kernelindex.qkv_qknorm_backward(impl, impl_mode, grad_query, ..., k_normed)
        -> (grad_hidden_states, grad_q_weight, grad_k_weight, grad_v_weight,
            grad_q_norm_weight, grad_k_norm_weight)
    torch.ops.kernelindex.qkv_qknorm_backward_out(impl, impl_mode, grad_hidden_states, ...,
        grad_k_norm_weight, grad_query, ..., k_normed) -> None      (destination passing)

One op for every implementation: `impl` is the registry name (`kernels/implementations.py`:
"ext-streamnorm", "ext-portable", "ext-hybrid", "ext-fused", and "reference", which also runs on
the CPU); `impl_mode` is the implementation's mode ("auto" for the registered revisions; the lab's
debug modes pass through). Both are plain strings in the schema, so under `torch.compile` they are
constants of the graph and the op is one opaque node: `register_fake` gives the outputs' shapes
and dtypes from the inputs' (no kernel runs while tracing), so
`torch.compile(fn, fullgraph=True)` traces a call without a graph break.

The functional op allocates six independent outputs (custom ops may not return tensors that alias
each other) and runs the implementation's destination-passing entry point into them; the CUDA
work is queued on torch's current stream, so the op captures into CUDA graphs. The harness and the
runner call the CUDA implementations through these ops (`Implementation.load`/`load_out`).

What is dispatched is the registry's entry point, resolved when the op runs; this module is the
calling convention (like the harness), not part of any implementation's code digest.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import torch
from torch import Tensor

from kernels.ops.qkv_qknorm_backward.definition import HEAD_DIM, HIDDEN, INPUT_NAMES, KV_SIZE, Q_SIZE

NAMESPACE = "kernelindex"
OP = f"{NAMESPACE}::qkv_qknorm_backward"
OP_OUT = f"{NAMESPACE}::qkv_qknorm_backward_out"

# impl -> its destination-passing entry point (the registry's `out_entry_point`, kernels/
# implementations.py; a test checks that the two agree). Kept here so that the op needs neither
# the registry nor pydantic where it runs.
_PKG = "kernels.ops.qkv_qknorm_backward"
OUT_ENTRY_POINTS = {
    "ext-streamnorm": f"{_PKG}.ext_streamnorm:qkv_qknorm_backward_out",
    "ext-portable": f"{_PKG}.ext_portable:qkv_qknorm_backward_out",
    "ext-hybrid": f"{_PKG}.ext_hybrid:qkv_qknorm_backward_out",
    "ext-fused": f"{_PKG}.ext_fused:qkv_qknorm_backward_out",
}
REFERENCE = f"{_PKG}.reference:reference"  # the "reference" impl (CPU and CUDA)

_resolved: dict[str, tuple] = {}


def _entry_points(impl: str):
    """(the destination-passing function, or None for the reference; the reference function)."""
    if impl not in _resolved:
        if impl == "reference":
            module, _, attr = REFERENCE.partition(":")
            _resolved[impl] = (None, getattr(importlib.import_module(module), attr))
        elif impl in OUT_ENTRY_POINTS:
            module, _, attr = OUT_ENTRY_POINTS[impl].partition(":")
            _resolved[impl] = (getattr(importlib.import_module(module), attr), None)
        else:
            raise ValueError(f"impl: unknown implementation {impl!r}; the op runs {sorted([*OUT_ENTRY_POINTS, 'reference'])}")
    return _resolved[impl]


def _new_outputs(hidden_states: Tensor) -> tuple[Tensor, ...]:
    b, s, _ = hidden_states.shape
    dev, bf = hidden_states.device, hidden_states.dtype
    return (
        torch.empty((b, s, HIDDEN), dtype=bf, device=dev),
        torch.empty((Q_SIZE, HIDDEN), dtype=bf, device=dev),
        torch.empty((KV_SIZE, HIDDEN), dtype=bf, device=dev),
        torch.empty((KV_SIZE, HIDDEN), dtype=bf, device=dev),
        torch.empty((HEAD_DIM,), dtype=torch.float32, device=dev),
        torch.empty((HEAD_DIM,), dtype=torch.float32, device=dev),
    )


def _run_into(impl: str, mode: str, outputs: Sequence[Tensor], inputs: dict[str, Tensor]) -> None:
    out_fn, ref_fn = _entry_points(impl)
    if out_fn is not None:
        out_fn(outputs, mode=mode, **inputs)
        return
    if mode != "auto":
        raise ValueError(f"mode: the reference has only 'auto', got {mode!r}")
    for dst, src in zip(outputs, ref_fn(**inputs)):
        dst.copy_(src)


@torch.library.custom_op(OP, mutates_args=())
def qkv_qknorm_backward(
    impl: str,
    impl_mode: str,
    grad_query: Tensor,
    grad_key: Tensor,
    grad_value: Tensor,
    hidden_states: Tensor,
    q_weight: Tensor,
    k_weight: Tensor,
    v_weight: Tensor,
    q_norm_weight: Tensor,
    k_norm_weight: Tensor,
    q_rstd: Tensor,
    k_rstd: Tensor,
    q_normed: Tensor,
    k_normed: Tensor,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    inputs = dict(
        zip(
            INPUT_NAMES,
            (
                grad_query,
                grad_key,
                grad_value,
                hidden_states,
                q_weight,
                k_weight,
                v_weight,
                q_norm_weight,
                k_norm_weight,
                q_rstd,
                k_rstd,
                q_normed,
                k_normed,
            ),
        )
    )
    outputs = _new_outputs(hidden_states)
    _run_into(impl, impl_mode, outputs, inputs)
    return outputs


@qkv_qknorm_backward.register_fake
def _qkv_qknorm_backward_fake(
    impl,
    impl_mode,
    grad_query,
    grad_key,
    grad_value,
    hidden_states,
    q_weight,
    k_weight,
    v_weight,
    q_norm_weight,
    k_norm_weight,
    q_rstd,
    k_rstd,
    q_normed,
    k_normed,
):
    _check_impl(impl)
    torch._check(
        hidden_states.dim() == 3 and hidden_states.shape[2] == HIDDEN,
        lambda: f"hidden_states: expected [B, S, {HIDDEN}], got {list(hidden_states.shape)}",
    )
    return _new_outputs(hidden_states)


_OUT_NAMES = ("grad_hidden_states", "grad_q_weight", "grad_k_weight", "grad_v_weight", "grad_q_norm_weight", "grad_k_norm_weight")


@torch.library.custom_op(OP_OUT, mutates_args=_OUT_NAMES)
def qkv_qknorm_backward_out(
    impl: str,
    impl_mode: str,
    grad_hidden_states: Tensor,
    grad_q_weight: Tensor,
    grad_k_weight: Tensor,
    grad_v_weight: Tensor,
    grad_q_norm_weight: Tensor,
    grad_k_norm_weight: Tensor,
    grad_query: Tensor,
    grad_key: Tensor,
    grad_value: Tensor,
    hidden_states: Tensor,
    q_weight: Tensor,
    k_weight: Tensor,
    v_weight: Tensor,
    q_norm_weight: Tensor,
    k_norm_weight: Tensor,
    q_rstd: Tensor,
    k_rstd: Tensor,
    q_normed: Tensor,
    k_normed: Tensor,
) -> None:
    inputs = dict(
        zip(
            INPUT_NAMES,
            (
                grad_query,
                grad_key,
                grad_value,
                hidden_states,
                q_weight,
                k_weight,
                v_weight,
                q_norm_weight,
                k_norm_weight,
                q_rstd,
                k_rstd,
                q_normed,
                k_normed,
            ),
        )
    )
    outputs = (grad_hidden_states, grad_q_weight, grad_k_weight, grad_v_weight, grad_q_norm_weight, grad_k_norm_weight)
    _run_into(impl, impl_mode, outputs, inputs)


@qkv_qknorm_backward_out.register_fake
def _qkv_qknorm_backward_out_fake(impl, impl_mode, *tensors) -> None:
    _check_impl(impl)
    return None


def _check_impl(impl: str) -> None:
    """An unknown implementation fails while tracing too, not only when the graph runs."""
    if impl != "reference" and impl not in OUT_ENTRY_POINTS:
        raise ValueError(f"impl: unknown implementation {impl!r}; the op runs {sorted([*OUT_ENTRY_POINTS, 'reference'])}")


def call(impl: str, mode: str = "auto"):
    """fn(**inputs) -> the six outputs, through torch.ops (what the harness times)."""
    op = torch.ops.kernelindex.qkv_qknorm_backward

    def fn(**inputs):
        _check_names(inputs)
        return op(impl, mode, *(inputs[n] for n in INPUT_NAMES))

    return fn


def call_out(impl: str, mode: str = "auto"):
    """fn(outputs, **inputs) -> None, through torch.ops (destination passing)."""
    op = torch.ops.kernelindex.qkv_qknorm_backward_out

    def fn(outputs, **inputs):
        _check_names(inputs)
        if len(outputs) != len(_OUT_NAMES):
            raise ValueError(f"outputs: expected {len(_OUT_NAMES)} tensors {list(_OUT_NAMES)}, got {len(outputs)}")
        op(impl, mode, *outputs, *(inputs[n] for n in INPUT_NAMES))

    return fn


def _check_names(inputs: dict) -> None:
    unknown = set(inputs) - set(INPUT_NAMES)
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not an input of this operation")
    missing = [n for n in INPUT_NAMES if n not in inputs]
    if missing:
        raise ValueError(f"{missing[0]}: missing")
