"""The PyTorch reference, written from the math in definition.py (not from SOL-ExecBench's code).

`reference(...)` is the eager implementation that is timed (bf16 GEMMs, as PyTorch runs them).
`reference_fp32(...)` is the correctness oracle: the same bf16 rounding of G (part of the
definition), but the two GEMMs in fp32 and every output returned in fp32.
"""

from __future__ import annotations

import torch

from kernels.ops.qkv_qknorm_backward.definition import G_COLS, HIDDEN


def _norm_backward(g: torch.Tensor, xhat: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor):
    """RMSNorm backward with the (1 + w) scale, from saved x̂ and rstd. Returns (g_in bf16 [B,H,S,D],
    grad_w fp32 [D])."""
    gf = g.float()
    xf = xhat.float()
    grad_w = (gf * xf).sum(dim=(0, 1, 2))
    ghat = (gf * (1.0 + w.float())).to(torch.bfloat16).float()
    m = (ghat * xf).mean(dim=-1, keepdim=True)
    g_in = (rstd.float() * (ghat - m * xf)).to(torch.bfloat16)
    return g_in, grad_w


def _g_matrix(grad_query, grad_key, grad_value, q_norm_weight, k_norm_weight, q_rstd, k_rstd,
              q_normed, k_normed):
    b, _, s, _ = grad_query.shape
    t = b * s
    gq, grad_qw = _norm_backward(grad_query, q_normed, q_norm_weight, q_rstd)
    gk, grad_kw = _norm_backward(grad_key, k_normed, k_norm_weight, k_rstd)
    gv = grad_value.to(torch.bfloat16)
    # [B, H, S, D] -> [B, S, H, D] -> [T, H·D]
    g = torch.cat(
        [x.transpose(1, 2).reshape(t, -1) for x in (gq, gk, gv)], dim=1
    )  # [T, 1536] bf16
    assert g.shape == (t, G_COLS)
    return g, grad_qw, grad_kw


def reference(
    grad_query, grad_key, grad_value, hidden_states, q_weight, k_weight, v_weight,
    q_norm_weight, k_norm_weight, q_rstd, k_rstd, q_normed, k_normed,
):
    """Eager reference: returns the six outputs in definition order (bf16 GEMMs)."""
    b, s, _ = hidden_states.shape
    t = b * s
    g, grad_qw, grad_kw = _g_matrix(grad_query, grad_key, grad_value, q_norm_weight, k_norm_weight,
                                    q_rstd, k_rstd, q_normed, k_normed)
    x = hidden_states.reshape(t, HIDDEN)
    w = torch.cat([q_weight, k_weight, v_weight], dim=0)  # [1536, 640]
    grad_hidden = (g @ w).reshape(b, s, HIDDEN)
    grad_w = g.t() @ x  # [1536, 640]
    nq, nk = q_weight.shape[0], k_weight.shape[0]
    return (
        grad_hidden,
        grad_w[:nq],
        grad_w[nq:nq + nk],
        grad_w[nq + nk:],
        grad_qw,
        grad_kw,
    )


def reference_fp32(
    grad_query, grad_key, grad_value, hidden_states, q_weight, k_weight, v_weight,
    q_norm_weight, k_norm_weight, q_rstd, k_rstd, q_normed, k_normed,
):
    """Correctness oracle: G rounded to bf16 as defined, GEMMs in fp32, outputs in fp32."""
    b, s, _ = hidden_states.shape
    t = b * s
    g, grad_qw, grad_kw = _g_matrix(grad_query, grad_key, grad_value, q_norm_weight, k_norm_weight,
                                    q_rstd, k_rstd, q_normed, k_normed)
    g = g.float()
    x = hidden_states.reshape(t, HIDDEN).float()
    w = torch.cat([q_weight, k_weight, v_weight], dim=0).float()
    grad_hidden = (g @ w).reshape(b, s, HIDDEN)
    grad_w = g.t() @ x
    nq, nk = q_weight.shape[0], k_weight.shape[0]
    return (
        grad_hidden,
        grad_w[:nq],
        grad_w[nq:nq + nk],
        grad_w[nq + nk:],
        grad_qw,
        grad_kw,
    )
