"""The operations the harness knows, by the short key the CLI takes (`kernelindex bench 051`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernels.ops.qkv_qknorm_backward import definition as qkv_def


@dataclass(frozen=True)
class Operation:
    key: str
    name: str  # OperationSpec metadata name
    title: str
    definition: Any  # module: operation_spec(), flops(), min_bytes(), shapes, names
    case_shapes: list[tuple[int, int]]
    small_case_shapes: list[tuple[int, int]]

    def make_inputs(self, batch: int, seq: int, seed: int, device: str):
        from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

        return make_inputs(batch, seq, seed, device)

    def allocate_outputs(self, batch: int, seq: int, device: str):
        from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs

        return allocate_outputs(batch, seq, device)

    def oracle(self) -> Callable:
        from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

        return reference_fp32


OPERATIONS: dict[str, Operation] = {
    "051": Operation(
        key="051",
        name=qkv_def.OPERATION_NAME,
        title="Gemma-3-270m QKV projection backward with Q/K RMSNorm",
        definition=qkv_def,
        case_shapes=qkv_def.CASE_SHAPES,
        small_case_shapes=qkv_def.SMALL_CASE_SHAPES,
    )
}


def get_operation(key: str) -> Operation:
    key = key.lstrip("0").zfill(3) if key.isdigit() else key
    if key not in OPERATIONS:
        raise ValueError(f"unknown operation {key!r}; known: {sorted(OPERATIONS)}")
    return OPERATIONS[key]
