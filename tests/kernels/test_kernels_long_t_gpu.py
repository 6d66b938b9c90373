"""On a GPU only (skipped elsewhere): every CUDA implementation through the torch op at long
sequences (T ≥ 16385) against a float64 oracle, bitwise repeatable; and torch.compile of the op on
CUDA (fullgraph, Inductor) gives the eager op's outputs bitwise. The same checks as
lab/qkv_qknorm_backward/op_check.py (issue 28), as tests."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0), reason="needs an sm_90 GPU (H100/H200)"
)

from kernels.ops.qkv_qknorm_backward import torch_op  # noqa: E402
from kernels.ops.qkv_qknorm_backward.definition import INPUT_NAMES, OUTPUT_NAMES  # noqa: E402
from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs  # noqa: E402
from kernels.ops.qkv_qknorm_backward.reference import _g_matrix  # noqa: E402

IMPLS = ("ext-streamnorm", "ext-portable", "ext-hybrid", "ext-fused")
LIMIT = 0.05  # max|err|/rms(ref); bf16 outputs land at 0.01–0.03


def _fp64(inputs):
    names = ("grad_query", "grad_key", "grad_value", "q_norm_weight", "k_norm_weight", "q_rstd", "k_rstd", "q_normed", "k_normed")
    g, _, _ = _g_matrix(*(inputs[n] for n in names))
    b, s, h = inputs["hidden_states"].shape
    g = g.double()
    w = torch.cat([inputs["q_weight"], inputs["k_weight"], inputs["v_weight"]]).double()
    dw = g.t() @ inputs["hidden_states"].reshape(b * s, h).double()
    return (
        (g @ w).reshape(b, s, h),
        dw[:1024],
        dw[1024:1280],
        dw[1280:],
        (inputs["grad_query"].double() * inputs["q_normed"].double()).sum(dim=(0, 1, 2)),
        (inputs["grad_key"].double() * inputs["k_normed"].double()).sum(dim=(0, 1, 2)),
    )


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("b,s", [(1, 16385), (1, 32769), (2, 8193)])
def test_long_sequences_against_float64(impl, b, s):
    inputs = make_inputs(b, s, seed=16385 + s, device="cuda")
    outs = allocate_outputs(b, s, "cuda")
    torch_op.call_out(impl)(outs, **inputs)
    again = torch_op.call(impl)(**inputs)
    ref = _fp64(inputs)
    for name, o, a, r in zip(OUTPUT_NAMES, outs, again, ref):
        err = float((o.double() - r).abs().max() / r.pow(2).mean().sqrt())
        assert err < LIMIT, f"{impl} {name} at B={b} S={s}: max|err|/rms {err:.4f}"
        assert torch.equal(o, a), f"{impl} {name}: the two ops differ"


@pytest.mark.parametrize("impl", ("ext-hybrid", "ext-fused"))
def test_torch_compile_of_the_op_on_cuda(impl):
    inputs = make_inputs(2, 300, seed=5, device="cuda")
    args = [inputs[n] for n in INPUT_NAMES]
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: torch.ops.kernelindex.qkv_qknorm_backward(impl, "auto", *a), fullgraph=True)
    for got, want in zip(compiled(*args), torch.ops.kernelindex.qkv_qknorm_backward(impl, "auto", *args)):
        assert torch.equal(got, want)
