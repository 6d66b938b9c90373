"""The harness's correctness checker catches planted faults (CPU, tiny shapes)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from kernels.harness.correctness import Tolerance, check_case, compare, run_round  # noqa: E402
from kernels.operations import get_operation  # noqa: E402
from kernels.ops.qkv_qknorm_backward.reference import reference  # noqa: E402

OP = get_operation("051")


def _round(call=None, call_out=None, seed=7):
    return run_round(op=OP, call=call, call_out=call_out, batch=2, seq=3, seed=seed, round_index=0, device="cpu", tol=Tolerance())


def test_reference_passes():
    r = _round(call=reference)
    assert r.passed, r.failure
    assert {o.name for o in r.outputs} == set(OP.definition.OUTPUT_NAMES)


def test_planted_wrong_output_fails():
    def wrong(**inputs):
        out = list(reference(**inputs))
        out[2] = out[2] * 1.25 + 0.5  # grad_k_weight
        return tuple(out)

    r = _round(call=wrong)
    assert not r.passed
    assert "grad_k_weight" in r.failure
    assert [o.name for o in r.outputs if not o.passed] == ["grad_k_weight"]


def test_a_single_nan_fails():
    def nan(**inputs):
        out = list(reference(**inputs))
        out[0] = out[0].clone()
        out[0].view(-1)[3] = float("nan")
        return tuple(out)

    r = _round(call=nan)
    assert not r.passed
    assert "grad_hidden_states" in r.failure and "NaN" in r.failure


def test_unwritten_output_is_caught_by_poison():
    def partial_out(outputs, **inputs):
        ref = reference(**inputs)
        for i, (dst, src) in enumerate(zip(outputs, ref)):
            if i != 3:  # never writes grad_v_weight
                dst.copy_(src)

    r = _round(call_out=partial_out)
    assert not r.passed
    assert "grad_v_weight" in r.failure and "NaN" in r.failure


def test_destination_passing_that_writes_everything_passes():
    def full_out(outputs, **inputs):
        for dst, src in zip(outputs, reference(**inputs)):
            dst.copy_(src)

    assert _round(call_out=full_out).passed


def test_all_zero_output_fails():
    def zeros(**inputs):
        out = list(reference(**inputs))
        out[4] = torch.zeros_like(out[4])
        return tuple(out)

    r = _round(call=zeros)
    assert not r.passed and "all zero" in r.failure


def test_wrong_dtype_and_exception_fail():
    def fp32(**inputs):
        out = list(reference(**inputs))
        out[0] = out[0].float()
        return tuple(out)

    r = _round(call=fp32)
    assert not r.passed and "dtype" in r.failure

    def boom(**inputs):
        raise RuntimeError("kernel launch failed")

    r = _round(call=boom)
    assert not r.passed and "kernel launch failed" in r.failure


def test_matched_ratio_threshold():
    ref = torch.linspace(-1, 1, 1000)
    out = ref.clone()
    out[:5] += 1.0  # 0.5% wrong: passes at 99%
    assert compare("x", out, ref, "float32", Tolerance()).passed
    out[:20] += 1.0  # 2% wrong: fails
    res = compare("x", out, ref, "float32", Tolerance())
    assert not res.passed and res.matched_ratio == pytest.approx(0.98)


def test_fresh_inputs_every_round():
    seen = []

    def spy(**inputs):
        seen.append(inputs["grad_query"].float().sum().item())
        return reference(**inputs)

    check = check_case(op=OP, call=spy, call_out=None, batch=1, seq=2, case_index=0, rounds=3, base_seed=0, device="cpu", tol=Tolerance())
    assert check.passed and len(check.rounds) == 3
    assert len(set(seen)) == 3
    assert len({r.seed for r in check.rounds}) == 3


def test_different_rounding_of_g_passes_but_a_dropped_term_fails():
    """Keeping G in fp32 (as torch.compile may) is as accurate as the definition and passes;
    leaving out the key head's contribution, or one token's, fails."""
    from kernels.ops.qkv_qknorm_backward.reference import _g_matrix

    def g_fp32(**inp):
        b, s, _ = inp["hidden_states"].shape
        g, gqw, gkw = _g_matrix(
            inp["grad_query"],
            inp["grad_key"],
            inp["grad_value"],
            inp["q_norm_weight"],
            inp["k_norm_weight"],
            inp["q_rstd"],
            inp["k_rstd"],
            inp["q_normed"],
            inp["k_normed"],
        )
        g = g.float() * (1 + 2e-3 * torch.randn(g.shape, generator=torch.Generator().manual_seed(1)))
        x = inp["hidden_states"].reshape(b * s, -1).float()
        w = torch.cat([inp["q_weight"], inp["k_weight"], inp["v_weight"]]).float()
        dw = (g.t() @ x).to(torch.bfloat16)
        return ((g @ w).reshape(b, s, -1).to(torch.bfloat16), dw[:1024], dw[1024:1280], dw[1280:], gqw, gkw)

    r = run_round(op=OP, call=g_fp32, call_out=None, batch=4, seq=64, seed=3, round_index=0, device="cpu", tol=Tolerance())
    assert r.passed, r.failure

    def no_key(**inp):
        return reference(**dict(inp, grad_key=torch.zeros_like(inp["grad_key"])))

    r = run_round(op=OP, call=no_key, call_out=None, batch=4, seq=64, seed=3, round_index=0, device="cpu", tol=Tolerance())
    assert not r.passed and "grad_hidden_states" in r.failure

    def one_token_lost(**inp):
        gq = inp["grad_query"].clone()
        gq[0, :, 5] = 0
        gv = inp["grad_value"].clone()
        gv[0, :, 5] = 0
        gk = inp["grad_key"].clone()
        gk[0, :, 5] = 0
        return reference(**dict(inp, grad_query=gq, grad_key=gk, grad_value=gv))

    r = run_round(op=OP, call=one_token_lost, call_out=None, batch=4, seq=64, seed=3, round_index=0, device="cpu", tol=Tolerance())
    assert not r.passed
