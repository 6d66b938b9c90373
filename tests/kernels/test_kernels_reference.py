"""The reference against float64 autograd of the Gemma-3 forward (projections, Q/K RMSNorm with
the (1 + w) scale), on random data, with x̂ and rstd taken from that forward pass."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from kernels.ops.qkv_qknorm_backward.definition import HEAD_DIM, HIDDEN  # noqa: E402
from kernels.ops.qkv_qknorm_backward.reference import reference, reference_fp32  # noqa: E402

EPS = 1e-6


def consistent_case(batch: int, seq: int, seed: int):
    """Float64 forward + autograd; returns (inputs for the reference, expected float64 grads)."""
    g = torch.Generator().manual_seed(seed)

    def bf(*shape, scale=1.0):  # bf16-representable values, held in float64
        return (torch.randn(*shape, generator=g) * scale).to(torch.bfloat16).double()

    x = bf(batch, seq, HIDDEN).requires_grad_()
    wq = bf(4 * HEAD_DIM, HIDDEN, scale=HIDDEN**-0.5).requires_grad_()
    wk = bf(HEAD_DIM, HIDDEN, scale=HIDDEN**-0.5).requires_grad_()
    wv = bf(HEAD_DIM, HIDDEN, scale=HIDDEN**-0.5).requires_grad_()
    nq = bf(HEAD_DIM, scale=0.5).requires_grad_()
    nk = bf(HEAD_DIM, scale=0.5).requires_grad_()

    def heads(t, h):  # [B, S, h·D] -> [B, h, S, D]
        return t.view(batch, seq, h, HEAD_DIM).transpose(1, 2)

    q = heads(x @ wq.t(), 4)
    k = heads(x @ wk.t(), 1)
    v = heads(x @ wv.t(), 1)
    q_rstd = torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + EPS)
    k_rstd = torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + EPS)
    q_hat = q * q_rstd
    k_hat = k * k_rstd
    q_out = q_hat * (1.0 + nq)
    k_out = k_hat * (1.0 + nk)

    gq = bf(batch, 4, seq, HEAD_DIM)
    gk = bf(batch, 1, seq, HEAD_DIM)
    gv = bf(batch, 1, seq, HEAD_DIM)
    loss = (q_out * gq).sum() + (k_out * gk).sum() + (v * gv).sum()
    loss.backward()

    inputs = {
        "grad_query": gq.to(torch.bfloat16),
        "grad_key": gk.to(torch.bfloat16),
        "grad_value": gv.to(torch.bfloat16),
        "hidden_states": x.detach().to(torch.bfloat16),
        "q_weight": wq.detach().to(torch.bfloat16),
        "k_weight": wk.detach().to(torch.bfloat16),
        "v_weight": wv.detach().to(torch.bfloat16),
        "q_norm_weight": nq.detach().to(torch.bfloat16),
        "k_norm_weight": nk.detach().to(torch.bfloat16),
        "q_rstd": q_rstd.detach().float(),
        "k_rstd": k_rstd.detach().float(),
        "q_normed": q_hat.detach().to(torch.bfloat16),
        "k_normed": k_hat.detach().to(torch.bfloat16),
    }
    expected = (x.grad, wq.grad, wk.grad, wv.grad, nq.grad, nk.grad)
    return inputs, expected


NAMES = ["grad_hidden_states", "grad_q_weight", "grad_k_weight", "grad_v_weight", "grad_q_norm_weight", "grad_k_norm_weight"]


def assert_close(name, out, ref):
    out = out.double()
    assert out.shape == ref.shape, name
    assert torch.isfinite(out).all(), name
    rel = ((out - ref).norm() / ref.norm()).item()
    assert rel < 1.5e-2, f"{name}: relative error {rel:.3g}"
    scale = ref.abs().max().item()
    ok = (out - ref).abs() <= 2e-2 * scale + 3e-2 * ref.abs()
    assert ok.double().mean().item() >= 0.99, f"{name}: {ok.double().mean().item():.4f} matched"


@pytest.mark.parametrize("batch,seq,seed", [(1, 1, 0), (2, 5, 1), (3, 7, 2), (1, 33, 3)])
@pytest.mark.parametrize("fn", [reference, reference_fp32], ids=["reference", "reference_fp32"])
def test_reference_matches_float64_autograd(batch, seq, seed, fn):
    inputs, expected = consistent_case(batch, seq, seed)
    outputs = fn(**inputs)
    assert len(outputs) == 6
    assert outputs[0].dtype == (torch.bfloat16 if fn is reference else torch.float32)
    assert outputs[4].dtype == torch.float32 and outputs[5].dtype == torch.float32
    for name, out, ref in zip(NAMES, outputs, expected):
        assert_close(name, out, ref)


def test_reference_uses_given_rstd_and_xhat():
    """Inconsistent rstd/x̂ (as in SOL's inputs) are used as given: doubling rstd doubles G,
    hence both GEMM outputs, and leaves the norm-weight grads alone."""
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    inputs = make_inputs(2, 3, seed=5)
    base = reference_fp32(**inputs)
    doubled = dict(inputs, q_rstd=inputs["q_rstd"] * 2, k_rstd=inputs["k_rstd"] * 2)
    out = reference_fp32(**doubled)
    torch.testing.assert_close(out[1], base[1] * 2, rtol=1e-5, atol=1e-4)  # grad_q_weight
    torch.testing.assert_close(out[4], base[4])  # grad_q_norm_weight
    torch.testing.assert_close(out[3], base[3])  # grad_v_weight: V passes through
