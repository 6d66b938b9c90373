"""The argument checks of every implementation of this operation, done in Python before any kernel
runs (torch-free: they read tensor attributes only, so the CPU tests exercise them). A failure is
a ValueError that names the tensor and the problem."""

from __future__ import annotations

from typing import Any

from kernels.ops.qkv_qknorm_backward.definition import (
    HEAD_DIM, HIDDEN, INPUTS, KV_SIZE, OUTPUTS, Q_SIZE, input_shapes, output_shapes,
)


def _dtype_name(t: Any) -> str:
    return str(getattr(t, "dtype", "?")).replace("torch.", "")


def infer_axes(inputs: dict[str, Any]) -> tuple[int, int]:
    hs = inputs.get("hidden_states")
    if hs is None or not hasattr(hs, "shape"):
        raise ValueError("hidden_states: missing or not a tensor")
    if len(hs.shape) != 3 or hs.shape[2] != HIDDEN:
        raise ValueError(f"hidden_states: expected shape [B, S, {HIDDEN}], got {list(hs.shape)}")
    b, s = int(hs.shape[0]), int(hs.shape[1])
    if b < 1 or s < 1:
        raise ValueError(f"hidden_states: batch and sequence must be >= 1, got B={b}, S={s}")
    return b, s


def check_inputs(inputs: dict[str, Any], device_type: str = "cuda") -> tuple[int, int]:
    """Raise ValueError naming the tensor and the problem; return (B, S)."""
    unknown = set(inputs) - set(INPUTS)
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not an input of this operation")
    for name in INPUTS:
        if name not in inputs:
            raise ValueError(f"{name}: missing")
        if not all(hasattr(inputs[name], a) for a in ("shape", "dtype", "device", "is_contiguous")):
            raise ValueError(f"{name}: not a tensor")
    b, s = infer_axes(inputs)
    shapes = input_shapes(b, s)
    device = None
    for name, (_, dtype, _) in INPUTS.items():
        t = inputs[name]
        if tuple(t.shape) != shapes[name]:
            raise ValueError(
                f"{name}: expected shape {list(shapes[name])} (B={b}, S={s}), got {list(t.shape)}"
            )
        if _dtype_name(t) != dtype:
            raise ValueError(f"{name}: expected dtype {dtype}, got {_dtype_name(t)}")
        if t.device.type != device_type:
            raise ValueError(f"{name}: expected a {device_type} tensor, got device {t.device}")
        if device is None:
            device = t.device
        elif t.device != device:
            raise ValueError(f"{name}: on {t.device}, but the other inputs are on {device}")
        if not t.is_contiguous():
            raise ValueError(f"{name}: must be contiguous (row-major), got strides {list(t.stride())}")
    return b, s


def check_outputs(outputs: Any, b: int, s: int, device: Any, alignment: int = 1) -> None:
    """Destination-passing outputs; `alignment`: the byte alignment the kernels need."""
    if len(outputs) != len(OUTPUTS):
        raise ValueError(f"outputs: expected {len(OUTPUTS)} tensors {list(OUTPUTS)}, got {len(outputs)}")
    shapes = output_shapes(b, s)
    for name, t in zip(OUTPUTS, outputs):
        if not all(hasattr(t, a) for a in ("shape", "dtype", "device", "is_contiguous")):
            raise ValueError(f"{name}: not a tensor")
        if tuple(t.shape) != shapes[name]:
            raise ValueError(f"{name}: expected shape {list(shapes[name])}, got {list(t.shape)}")
        if _dtype_name(t) != OUTPUTS[name][1]:
            raise ValueError(f"{name}: expected dtype {OUTPUTS[name][1]}, got {_dtype_name(t)}")
        if t.device != device:
            raise ValueError(f"{name}: on {t.device}, but the inputs are on {device}")
        if not t.is_contiguous():
            raise ValueError(f"{name}: must be contiguous, got strides {list(t.stride())}")
        if alignment > 1 and t.data_ptr() % alignment != 0:
            raise ValueError(f"{name}: output address must be {alignment}-byte aligned")


def aligned_inputs(inputs: dict[str, Any], alignment: int = 16) -> list[Any]:
    """The inputs in definition order, each copied if its address is not aligned (TMA and 16-byte
    loads need aligned tensors; a copy is the caller's cost, never a wrong read)."""
    return [t if t.data_ptr() % alignment == 0 else t.clone() for t in (inputs[n] for n in INPUTS)]


assert Q_SIZE == 4 * HEAD_DIM and KV_SIZE == HEAD_DIM
