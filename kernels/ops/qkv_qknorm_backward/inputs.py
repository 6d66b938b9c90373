"""Seeded random inputs for one case. Norm weights are random (never ones); q_rstd/k_rstd and
q_normed/k_normed are independent random tensors, as in SOL-ExecBench's inputs (the definition
says to use them as given), except in `consistent_inputs`, which builds them from a forward pass."""

from __future__ import annotations

import math

import torch

from kernels.ops.qkv_qknorm_backward.definition import HIDDEN, INPUTS, input_shapes

_DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}


def make_inputs(batch_size: int, seq_len: int, seed: int, device: str = "cpu") -> dict[str, torch.Tensor]:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    shapes = input_shapes(batch_size, seq_len)
    out: dict[str, torch.Tensor] = {}
    for name in INPUTS:
        shape = shapes[name]
        dtype = _DTYPES[INPUTS[name][1]]
        if name.endswith("_rstd"):
            t = torch.rand(shape, generator=gen, device=device, dtype=torch.float32) * 1.5 + 0.5
        elif name.endswith("_norm_weight"):
            t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * 0.5
        elif name.endswith("_weight"):
            t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32) / math.sqrt(HIDDEN)
        else:
            t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
        out[name] = t.to(dtype).contiguous()
    return out


def allocate_outputs(batch_size: int, seq_len: int, device, fill: float = float("nan")):
    """Output buffers in definition order, filled with `fill` (NaN poisons them)."""
    from kernels.ops.qkv_qknorm_backward.definition import OUTPUTS, output_shapes

    shapes = output_shapes(batch_size, seq_len)
    return tuple(torch.full(shapes[name], fill, dtype=_DTYPES[OUTPUTS[name][1]], device=device) for name in OUTPUTS)
