"""ext-portable: 051 on Hopper and Blackwell alike. Our Q/K norm kernel (csrc/portable_norm.cu, no
Hopper-only instructions; one library built for sm_90a, sm_100a and sm_120) writes G = [GQ|GK|GV]
and the concatenated weights; the two GEMMs are cuBLAS's, through torch with destination-passing
outputs (dX = G·[Wq;Wk;Wv]; dW = Gᵀ·X with an fp32 output over pieces of ≤ 16384 tokens, rounded
once by our finish kernel); the norm-weight grads are summed in a fixed order.
On the H200 the GEMMs run at cuBLAS's rate, but the norm (~21 µs at T = 8192) is not hidden:
cuBLAS's kernels take every SM, so work on the other stream waits for SMs (BENCHMARKS.md).

Schedules (`mode`), all in one CUDA stream pair so that a captured graph holds the branches:
  "serial"   norm, then dX, then dW, one stream;
  "split"    norm, then dX and dW on two streams at once (small T: each GEMM fills few SMs);
  "chunkN"   N token chunks: the norm of chunk i+1 runs while cuBLAS computes chunk i's rows of
             dX on the other stream; dW over all tokens once the last chunk is normed;
  "auto"     the measured choice per token count (AUTO_PLAN).
(The norm kernel timed alone is lab/qkv_qknorm_backward/debug.py's, through `_run(norm_only=True)`.)
A suffix "-c0|1|2" forces the norm kernel's block shape (csrc/portable_norm.cu: 8 warps × 2 slots,
6 × 3, 4 × 4); by default AUTO_CONFIG, or config 0 where the chosen one does not fit (sm_120).
Entry points: qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs;
qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None. Arguments are checked in Python
before any kernel runs (ValueError names the tensor).
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

from kernels.ops.qkv_qknorm_backward.checks import aligned_inputs, check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.definition import G_COLS, HIDDEN, INPUT_NAMES, KV_SIZE, Q_SIZE
from kernels.ops.qkv_qknorm_backward.nvcc_library import CSRC, NvccLibrary

# sm_100a and sm_90a: the B200 and the H100/H200 (no 'a' feature is used; the targets name the
# chips); sm_120 with its PTX for later 12.x parts.
ARCH_FLAGS = (
    "-gencode=arch=compute_90a,code=sm_90a",
    "-gencode=arch=compute_100a,code=sm_100a",
    "-gencode=arch=compute_120,code=[sm_120,compute_120]",
)
ARCHITECTURES = ("sm_90", "sm_100", "sm_120")
FLAGS = ("-std=c++17", "-O3", *ARCH_FLAGS, "-lineinfo", "-Xcompiler", "-fPIC", "-shared", "-cudart", "static")


def declare(lib) -> None:
    lib.kidxp_norm_shape.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.kidxp_norm.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.kidxp_finalize.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.kidxp_finish.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.kidxp_error.argtypes = [ctypes.c_int]
    lib.kidxp_error.restype = ctypes.c_char_p


LIBRARY = NvccLibrary("kidx_portable", CSRC / "portable_norm.cu",
                      (CSRC / "common/ptx.cuh", CSRC / "common/launch.cuh"), FLAGS,
                      architectures=ARCHITECTURES, declare=declare)
MAX_TOKENS = (1 << 28) - 1
# token count below which -> schedule, and the norm's block shape (from the H200 measurements in
# kernels/BENCHMARKS.md: two streams everywhere; chunks never paid)
AUTO_PLAN: tuple[tuple[int, str], ...] = ((1 << 30, "split"),)
AUTO_CONFIG = 1
CONFIGS = 3

_shapes: dict[tuple[int, int, int], tuple[int, int, int]] = {}
_side: dict[int, Any] = {}
_sms: dict[int, int] = {}


def load(verbose: bool = False):
    """Build (or reuse) the library and return it (ctypes.CDLL); RuntimeError off its GPUs."""
    return LIBRARY.load(verbose)


def parse_mode(mode: str, tokens: int) -> tuple[str, int, int]:
    """mode -> (schedule, chunks, norm block config); "auto" resolves through AUTO_PLAN."""
    match = re.fullmatch(r"(auto|serial|split|chunk([1-9][0-9]?))(?:-c([0-9]))?", mode)
    if not match or (match.group(3) and int(match.group(3)) >= CONFIGS):
        raise ValueError(f"mode: expected auto, serial, split or chunk<N>, optionally "
                         f"-c0..-c{CONFIGS - 1}, got {mode!r}")
    name, config = match.group(1), int(match.group(3) or AUTO_CONFIG)
    if name == "auto":
        name = next(m for limit, m in AUTO_PLAN if tokens < limit)
    if name in ("serial", "split"):
        return name, 1, config
    return "chunk", int(name.removeprefix("chunk")), config


def chunk_bounds(tokens: int, chunks: int) -> list[tuple[int, int]]:
    """Token ranges of the chunks: equal, in multiples of 64 tokens, none empty."""
    if chunks == 1:
        return [(0, tokens)]
    per_chunk = -(-tokens // chunks)
    step = -(-per_chunk // 64) * 64
    return [(t, min(t + step, tokens)) for t in range(0, tokens, step)]


def norm_shape(lib, tokens: int, sms: int, config: int) -> tuple[int, int, int]:
    """(tokens per warp, norm blocks, config) of one norm launch over `tokens` tokens; config 0
    where the asked one fits no block on this device."""
    key = (tokens, sms, config)
    if key not in _shapes:
        out = (ctypes.c_int * 2)()
        used = config
        rc = lib.kidxp_norm_shape(tokens, sms, used, out)
        if rc != 0 and config != 0:
            used = 0
            rc = lib.kidxp_norm_shape(tokens, sms, used, out)
        if rc != 0:
            raise RuntimeError(f"ext-portable: no norm launch for {tokens} tokens: {lib.kidxp_error(rc).decode()}")
        _shapes[key] = (out[0], out[1], used)
    return _shapes[key]


def _device_state(device) -> tuple[int, Any]:
    import torch

    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sms:
        _sms[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
        _side[idx] = torch.cuda.Stream(device=idx)
    return _sms[idx], _side[idx]


def _check(lib, rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"ext-portable {what} failed: {lib.kidxp_error(rc).decode()}")


def _run(ins: dict[str, Any], dx, dw: tuple, dq, dk, b: int, s: int, mode: str, norm_only: bool = False) -> None:
    """dw: the three weight grads (contiguous, 16-byte aligned). `norm_only` (lab only): the norm
    kernel and the norm-weight sums alone, with the mode's block shape (dx and dw not written)."""
    import torch

    t = b * s
    schedule, chunks, config = parse_mode(mode, t)
    if norm_only:
        schedule, chunks = "norm", 1
    lib = load()
    device = ins["hidden_states"].device
    with torch.cuda.device(device):
        sms, side = _device_state(device)
        cur = torch.cuda.current_stream(device)
        bounds = chunk_bounds(t, chunks) if schedule == "chunk" else [(0, t)]
        shapes = [norm_shape(lib, hi - lo, sms, config) for lo, hi in bounds]
        g = torch.empty((t, G_COLS), dtype=torch.bfloat16, device=device)
        wcat = torch.empty((G_COLS, HIDDEN), dtype=torch.bfloat16, device=device)
        partials = torch.empty((sum(sh[1] for sh in shapes), 512), dtype=torch.float32, device=device)
        x = ins["hidden_states"].view(t, HIDDEN)
        dx2 = dx.view(t, HIDDEN)
        weights = [ins["q_weight"], ins["k_weight"], ins["v_weight"]]
        two_streams = schedule in ("split", "chunk")
        if two_streams:  # the concatenated weights on the side stream, beside the first norm launch
            side.wait_stream(cur)
            with torch.cuda.stream(side):
                torch.cat(weights, out=wcat)
        elif schedule == "serial":
            torch.cat(weights, out=wcat)
        ptrs = [ins[n].data_ptr() for n in ("grad_query", "grad_key", "grad_value", "q_normed", "k_normed",
                                            "q_rstd", "k_rstd", "q_norm_weight", "k_norm_weight")]
        row = 0
        for (lo, hi), (_, nb, used) in zip(bounds, shapes):
            arr = (ctypes.c_ulonglong * 11)(*ptrs, g.data_ptr(), partials[row].data_ptr())
            _check(lib, lib.kidxp_norm(arr, s, lo, hi, sms, used, ctypes.c_void_p(cur.cuda_stream)), "norm")
            row += nb
            if schedule == "chunk":  # this chunk's rows of dX on the side stream, beside the next norm
                side.wait_stream(cur)
                with torch.cuda.stream(side):
                    torch.mm(g[lo:hi], wcat, out=dx2[lo:hi])
        if schedule == "split":  # dX on the side stream (waiting for the norm only), dW here
            side.wait_stream(cur)
            with torch.cuda.stream(side):
                torch.mm(g, wcat, out=dx2)
        elif schedule == "serial":
            torch.mm(g, wcat, out=dx2)
        fin = (ctypes.c_void_p(partials.data_ptr()), row, ctypes.c_void_p(dq.data_ptr()), ctypes.c_void_p(dk.data_ptr()))
        if schedule != "norm":
            # dW = Gᵀ·X in fp32 by token pieces (cuBLAS is inaccurate at some K: DW_K_CHUNK),
            # rounded once into the three weight grads by the finish kernel, which also sums
            # the norm-weight partials (beside the side stream's dX)
            dw32 = torch.empty((G_COLS, HIDDEN), dtype=torch.float32, device=device)
            _dw_fp32(g, x, dw32)
            _check(lib, lib.kidxp_finish(*fin, ctypes.c_void_p(dw32.data_ptr()),
                                         *(ctypes.c_void_p(t.data_ptr()) for t in dw),
                                         ctypes.c_void_p(cur.cuda_stream)), "finish")
        else:
            _check(lib, lib.kidxp_finalize(*fin, ctypes.c_void_p(cur.cuda_stream)), "finalize")
        if two_streams:
            cur.wait_stream(side)  # temporaries are freed on `cur` only after the side stream's work


# dW's K (tokens) per cuBLAS call. On the H200 (torch 2.11, cuBLAS of CUDA 13.0) one Gᵀ·X call
# with K = 16385 or 49153 gives max|err|/rms 0.11 / 0.053 against float64 whatever the output
# type (fp32 or bf16) and torch's reduced-precision-reduction flag; every K ≤ 16384 measured
# (2048 … 16384, and the pieces 1 … 16000) gives ≤ 7e-5 with an fp32 output (issue 28,
# lab/qkv_qknorm_backward/LOG.md). So K is cut into pieces of at most 16384, summed in fp32.
DW_K_CHUNK = 16384


def _dw_fp32(g, x, out) -> None:
    """out (fp32 [1536,640]) = Gᵀ·X: cuBLAS with an fp32 output (aten::mm.dtype_out) over token
    pieces of at most DW_K_CHUNK, added in order (deterministic)."""
    import torch

    t = g.shape[0]
    torch.mm(g[:DW_K_CHUNK].t(), x[:DW_K_CHUNK], torch.float32, out=out)
    for lo in range(DW_K_CHUNK, t, DW_K_CHUNK):
        out.add_(torch.mm(g[lo:lo + DW_K_CHUNK].t(), x[lo:lo + DW_K_CHUNK], torch.float32))


def _aligned(inputs: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(INPUT_NAMES, aligned_inputs(inputs)))


def qkv_qknorm_backward(*, mode: str = "auto", **inputs):
    import torch

    parse_mode(mode, 1)
    b, s = check_inputs(inputs, "cuda")
    if b * s > MAX_TOKENS:
        raise ValueError(f"hidden_states: B·S = {b * s} tokens; ext-portable takes at most {MAX_TOKENS}")
    hs = inputs["hidden_states"]
    dw = torch.empty((G_COLS, HIDDEN), dtype=hs.dtype, device=hs.device)
    dx = torch.empty_like(hs)
    dq = torch.empty(256, dtype=torch.float32, device=hs.device)
    dk = torch.empty(256, dtype=torch.float32, device=hs.device)
    views = (dw[:Q_SIZE], dw[Q_SIZE:Q_SIZE + KV_SIZE], dw[Q_SIZE + KV_SIZE:])
    _run(_aligned(inputs), dx, views, dq, dk, b, s, mode)
    return dx, *views, dq, dk


def qkv_qknorm_backward_out(outputs, *, mode: str = "auto", **inputs) -> None:
    parse_mode(mode, 1)
    b, s = check_inputs(inputs, "cuda")
    if b * s > MAX_TOKENS:
        raise ValueError(f"hidden_states: B·S = {b * s} tokens; ext-portable takes at most {MAX_TOKENS}")
    check_outputs(outputs, b, s, inputs["hidden_states"].device)
    dx, dwq, dwk, dwv, dq, dk = outputs
    if any(t.data_ptr() % 16 for t in (dwq, dwk, dwv)):
        raise ValueError("grad_q_weight, grad_k_weight, grad_v_weight: addresses must be 16-byte aligned")
    _run(_aligned(inputs), dx, (dwq, dwk, dwv), dq, dk, b, s, mode)
