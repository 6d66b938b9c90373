"""KernelIndex's own definition of the Gemma-3-270m Q/K/V projection backward with Q/K RMSNorm.

Same math as SOL-ExecBench problem 051 (written from the math, not from its problem files: no
reference code, tolerances or case ids of theirs are used). Torch-free: the gateway may import it.

Math, for Q (K is the same with one head; x̂ = q_normed, w = q_norm_weight, g = grad_query):
  1. grad_q_norm_weight[d] = Σ_{b,h,s} g·x̂, accumulated in fp32.
  2. ĝ = bf16(g · (1 + w)), computed in fp32.
  3. m = mean_d(ĝ · x̂) per (b, h, s) in fp32; gq = bf16(q_rstd · (ĝ − m · x̂)).
     The given rstd and x̂ are used as they are, never recomputed.
  4. gv = grad_value (V has no norm).
  5. Each is transposed to [B, S, H·D]: GQ [T, 1024], GK [T, 256], GV [T, 256]; X = hidden as [T, 640].
  6. grad_hidden_states = GQ·Wq + GK·Wk + GV·Wv.
  7. grad_q_weight = GQᵀ·X, grad_k_weight = GKᵀ·X, grad_v_weight = GVᵀ·X.
"""

from __future__ import annotations

from typing import Any

OPERATION_NAME = "kernelindex-051-qkv-qknorm-backward"
SOL_BENCHMARK = "051_attention_qkv_with_qk_norm_single_kernel_backward"

HIDDEN = 640
Q_HEADS = 4
KV_HEADS = 1
HEAD_DIM = 256
Q_SIZE = Q_HEADS * HEAD_DIM  # 1024
KV_SIZE = KV_HEADS * HEAD_DIM  # 256
G_COLS = Q_SIZE + 2 * KV_SIZE  # 1536: [GQ | GK | GV]

# The 16 case shapes (batch_size, seq_len) of SOL-ExecBench 051 (public facts: shapes only).
CASE_SHAPES: list[tuple[int, int]] = [
    (4, 128), (4, 1024), (8, 128), (1, 1024), (1, 8192), (8, 256), (4, 373), (1, 997),
    (1, 131), (2, 128), (1, 4096), (1, 512), (4, 256), (32, 128), (64, 128), (16, 541),
]
# Tiny shapes for the CPU mode (B·S ≤ 64): odd sizes on purpose.
SMALL_CASE_SHAPES: list[tuple[int, int]] = [(1, 1), (2, 3), (1, 17), (3, 7), (2, 32)]

# name -> (shape in axis names / literals, dtype, description); order is the call order.
INPUTS: dict[str, tuple[list[str | int], str, str]] = {
    "grad_query": (["batch_size", "num_attention_heads", "seq_len", "head_dim"], "bfloat16",
                   "Gradient w.r.t. the normalized query, before the attention transpose."),
    "grad_key": (["batch_size", "num_key_value_heads", "seq_len", "head_dim"], "bfloat16",
                 "Gradient w.r.t. the normalized key."),
    "grad_value": (["batch_size", "num_key_value_heads", "seq_len", "head_dim"], "bfloat16",
                   "Gradient w.r.t. the value (no norm on V)."),
    "hidden_states": (["batch_size", "seq_len", "hidden_size"], "bfloat16",
                      "Forward input of the projections."),
    "q_weight": (["q_proj_size", "hidden_size"], "bfloat16", "Query projection weight [out, in]."),
    "k_weight": (["kv_proj_size", "hidden_size"], "bfloat16", "Key projection weight [out, in]."),
    "v_weight": (["kv_proj_size", "hidden_size"], "bfloat16", "Value projection weight [out, in]."),
    "q_norm_weight": (["head_dim"], "bfloat16", "Query RMSNorm weight w; the scale is (1 + w)."),
    "k_norm_weight": (["head_dim"], "bfloat16", "Key RMSNorm weight w; the scale is (1 + w)."),
    "q_rstd": (["batch_size", "num_attention_heads", "seq_len", 1], "float32",
               "Saved 1/rms of each query row; used as given."),
    "k_rstd": (["batch_size", "num_key_value_heads", "seq_len", 1], "float32",
               "Saved 1/rms of each key row; used as given."),
    "q_normed": (["batch_size", "num_attention_heads", "seq_len", "head_dim"], "bfloat16",
                 "Saved normalized query x̂ (before the (1 + w) scale); used as given."),
    "k_normed": (["batch_size", "num_key_value_heads", "seq_len", "head_dim"], "bfloat16",
                 "Saved normalized key x̂; used as given."),
}
OUTPUTS: dict[str, tuple[list[str | int], str, str]] = {
    "grad_hidden_states": (["batch_size", "seq_len", "hidden_size"], "bfloat16",
                           "GQ·Wq + GK·Wk + GV·Wv."),
    "grad_q_weight": (["q_proj_size", "hidden_size"], "bfloat16", "GQᵀ·X."),
    "grad_k_weight": (["kv_proj_size", "hidden_size"], "bfloat16", "GKᵀ·X."),
    "grad_v_weight": (["kv_proj_size", "hidden_size"], "bfloat16", "GVᵀ·X."),
    "grad_q_norm_weight": (["head_dim"], "float32", "Σ over batch, heads, tokens of grad_query·q_normed."),
    "grad_k_norm_weight": (["head_dim"], "float32", "Σ over batch, tokens of grad_key·k_normed."),
}
INPUT_NAMES = list(INPUTS)
OUTPUT_NAMES = list(OUTPUTS)

CONST_AXES = {
    "hidden_size": HIDDEN,
    "num_attention_heads": Q_HEADS,
    "num_key_value_heads": KV_HEADS,
    "head_dim": HEAD_DIM,
    "q_proj_size": Q_SIZE,
    "kv_proj_size": KV_SIZE,
}

DESCRIPTION = (
    "Backward of the Gemma-3-270m attention input projections with Q/K RMSNorm (hidden 640, "
    "4 query heads, 1 key/value head, head dim 256). For Q and K: grad_norm_weight = Σ g·x̂ "
    "(fp32); ĝ = bf16(g·(1+w)); m = mean_d(ĝ·x̂); g_in = bf16(rstd·(ĝ − m·x̂)) with the saved "
    "rstd and x̂ used as given; V passes through. With G = [GQ|GK|GV] as [T, 1536] (T = B·S): "
    "grad_hidden_states = G·[Wq;Wk;Wv] and [grad_q_weight;grad_k_weight;grad_v_weight] = Gᵀ·X. "
    "SOL-ExecBench's signature also carries query_transposed, key_transposed and rms_norm_eps, "
    "which its reference never reads; this definition omits them."
)


def tokens(batch_size: int, seq_len: int) -> int:
    return batch_size * seq_len


def flops(batch_size: int, seq_len: int) -> int:
    """The two GEMMs: 2·T·1536·640 each."""
    return 2 * 2 * tokens(batch_size, seq_len) * G_COLS * HIDDEN  # 3,932,160·T


def min_bytes(batch_size: int, seq_len: int) -> int:
    """Every input read once, every output written once."""
    t = tokens(batch_size, seq_len)
    per_token = (
        2 * (Q_SIZE + KV_SIZE + KV_SIZE + HIDDEN + Q_SIZE + KV_SIZE)  # grads, hidden, normed
        + 4 * (Q_HEADS + KV_HEADS)  # rstd
        + 2 * HIDDEN  # grad_hidden_states
    )  # 8,212
    weights = 2 * G_COLS * HIDDEN  # read
    weight_grads = 2 * G_COLS * HIDDEN  # written
    norm = 2 * 2 * HEAD_DIM + 2 * 4 * HEAD_DIM  # read bf16, written fp32
    return per_token * t + weights + weight_grads + norm  # + 3,935,232


def shape_of(spec: list[str | int], axes: dict[str, int]) -> tuple[int, ...]:
    values = {**CONST_AXES, **axes}
    return tuple(values[a] if isinstance(a, str) else a for a in spec)


def input_shapes(batch_size: int, seq_len: int) -> dict[str, tuple[int, ...]]:
    axes = {"batch_size": batch_size, "seq_len": seq_len}
    return {name: shape_of(spec[0], axes) for name, spec in INPUTS.items()}


def output_shapes(batch_size: int, seq_len: int) -> dict[str, tuple[int, ...]]:
    axes = {"batch_size": batch_size, "seq_len": seq_len}
    return {name: shape_of(spec[0], axes) for name, spec in OUTPUTS.items()}


def operation_spec() -> dict[str, Any]:
    axes: dict[str, Any] = {
        "batch_size": {"type": "var", "description": "Batch size B."},
        "seq_len": {"type": "var", "description": "Sequence length S; T = B·S tokens."},
    }
    descriptions = {
        "hidden_size": "Model width.",
        "num_attention_heads": "Query heads.",
        "num_key_value_heads": "Key/value heads.",
        "head_dim": "Head dimension.",
        "q_proj_size": "num_attention_heads·head_dim.",
        "kv_proj_size": "num_key_value_heads·head_dim.",
    }
    for name, value in CONST_AXES.items():
        axes[name] = {"type": "const", "value": value, "description": descriptions[name]}
    return {
        "name": OPERATION_NAME,
        "description": DESCRIPTION,
        "axes": axes,
        "inputs": {n: {"shape": s, "dtype": d, "description": t} for n, (s, d, t) in INPUTS.items()},
        "outputs": {n: {"shape": s, "dtype": d, "description": t} for n, (s, d, t) in OUTPUTS.items()},
        "tags": ["backward", "gemm", "rmsnorm", "attention", "model:google/gemma-3-270m", "L1"],
        "semantics": __doc__.split("\n\n", 1)[1].strip(),
        "reference": {"source": "kernelindex", "url": "kernels/ops/qkv_qknorm_backward/reference.py"},
        "relations": [
            {
                "relation": "same_math",
                "source": "sol-execbench",
                "benchmark": SOL_BENCHMARK,
                "notes": (
                    "Same math as SOL-ExecBench 051, written from the math. SOL's three unused "
                    "inputs (query_transposed, key_transposed, rms_norm_eps: never read by its "
                    "reference) are dropped; inputs and outputs otherwise correspond by name."
                ),
            }
        ],
    }


def workload_cases(shapes: list[tuple[int, int]]) -> list[dict[str, Any]]:
    return [
        {"index": i, "axes": {"batch_size": b, "seq_len": s}} for i, (b, s) in enumerate(shapes)
    ]
