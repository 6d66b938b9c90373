"""ext-fused (issue 28), sm_90a: the Q/K norm backward inside the GEMMs' operand stage, G never
written (csrc/ext_fused_sm90.cu, design at its top). A stats kernel writes each (token, head)
row's m = mean(ĝ·x̂) (20 bytes per token) and the norm-weight partials; then one cluster split-K
wgmma kernel computes dX = G·W and dW = Gᵀ·X, its TMA producer loading grad_query/q_normed (or
the K pair, or grad_value) boxes and two transform warpgroups (alternate k-blocks; one in mode
"t1") turning them into G's boxes in shared memory, PDL-chained to the stats kernel.

Entry points (arguments checked in Python before any kernel runs; ValueError names the tensor):
  qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs (definition order)
  qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None
Modes: "auto" (the plan table; two transform warpgroups, "t2"), "nopdl", a forced plan "c{C}-w{sw}-x{sx}[-xf]" (cluster size,
CTAs per dW tile, per dX tile; 1, 2, 4, 8; -xf launches dX first); "v1" (the first version's
transform: rstd and m loaded from global memory after each stage's wait), "f32" (ĝ = bf16(g·(1+w))
in fp32 with a conversion instruction, as the definition computes it, where "auto" uses one bf16x2
FMA: the same except within one bf16 ulp for |w| < 2^-8; csrc), "ct" (each consumer warpgroup
transforms its own box while its previous wgmma runs), "t1" (the 7th session's default: one
transform warpgroup, 512 threads; "t2", the default since the 8th, has two taking alternate
k-blocks, 640 threads, setmaxnreg), "t2-early" (t2 whose producer starts before the norm-weight
table has loaded: that table behind a named barrier of its readers, 10th session), "rs" (10th
session: no transform warpgroup, G never in shared memory — each consumer warpgroup builds its wgmma
A fragments in registers from the g and x̂ boxes and the k-block's rstd/m, 384 threads; "rs-early"
likewise) and "diag-notransform"
(timing only, wrong results: the transform does nothing), "diag-nox" (the same without the
q_normed/k_normed boxes: a plain GEMM's bytes, g read in place of G), "diag-nomath" /
"diag-nofence" / "diag-nosmem" (the transform without its arithmetic / its proxy fence / any of
its shared-memory traffic; timing only), "diag-nostats" (t2 without its stats kernel: m and the
norm-weight partials are garbage; timing only, 12th session), each also as a suffix of a forced plan
("c2-w2-x1:v1").
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

from kernels.ops.qkv_qknorm_backward.checks import aligned_inputs, check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.nvcc_library import CSRC, NvccLibrary

PLAN_FIELDS = ("cluster", "sw", "sx", "x_first", "grid", "ncw", "ncx", "nwt", "nxt", "kbw", "stats_blocks",
               "stats_per_warp")
MAX_ROWS = (1 << 31) - 1  # 5·T rows of 256, indexed in int
AUTO = (0, 0, 0, 0)
_FORCED = re.compile(r"c([1248])-w([1248])-x([1248])(-xf)?")


def declare(lib) -> None:
    lib.kidxf_plan.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
    lib.kidxf_plan.restype = ctypes.c_int
    lib.kidxf_launch.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int, ctypes.c_void_p]
    lib.kidxf_launch.restype = ctypes.c_int
    lib.kidxf_error.argtypes = [ctypes.c_int]
    lib.kidxf_error.restype = ctypes.c_char_p
    lib.kidxf_timeline_words.argtypes = []
    lib.kidxf_timeline_words.restype = ctypes.c_int


LIBRARY = NvccLibrary(
    "kidx_fused",
    CSRC / "ext_fused_sm90.cu",
    tuple(CSRC / h for h in ("common/ptx.cuh", "common/sm90.cuh", "common/tensor_map.cuh", "common/pipeline.cuh",
                             "common/epilogue.cuh", "common/launch.cuh")),
    architectures=("sm_90",),
    declare=declare,
)

_plans: dict[tuple, dict[str, int]] = {}
_sms: dict[int, int] = {}


def load(verbose: bool = False):
    return LIBRARY.load(verbose)


# flags bits 1-3 (csrc: kFast, kV1, kNoTransform, kNoX, kFastDiag, kFastF32, kConsumer, kT2), 4-6 (kFastDiag's parts
# left out), 7 (Params::early_loads), 8 (kRS: registers-fed A, no transform warpgroup) and 9 (no stats kernel)
EARLY = 1 << 6
RS = 1 << 7
NOSTATS = 1 << 8  # flags bit 9: the stats kernel left out (timing only)
VARIANTS = {"": 7, "t2": 7, "t1": 0, "v1": 1, "f32": 5, "ct": 6, "diag-notransform": 2, "diag-nox": 3, "diag-nomath": 4 | 1 << 3, "diag-nofence": 4 | 2 << 3,
            "diag-nosmem": 4 | 4 << 3, "t2-early": 7 | EARLY, "diag-nox-early": 3 | EARLY,
            "diag-notransform-early": 2 | EARLY, "rs": RS, "rs-early": RS | EARLY,
            "diag-nostats": 7 | NOSTATS}


def parse_mode(mode: str) -> tuple[tuple[int, ...], int]:
    """mode -> (forced plan {cluster, sw, sx, x_first}, all zero for the planner's; flags: bit 0 PDL,
    bits 1-2 the kernel variant)."""
    base, _, variant = mode.partition(":")
    if base in VARIANTS and not variant:
        base, variant = "auto", base
    if variant not in VARIANTS:
        raise ValueError(f"mode: unknown variant {variant!r} (expected one of {sorted(v for v in VARIANTS if v)})")
    forced, flags = _parse_plan(base)
    return forced, flags | VARIANTS[variant] << 1


def _parse_plan(mode: str) -> tuple[tuple[int, ...], int]:
    if mode == "auto":
        return AUTO, 1
    if mode == "nopdl":
        return AUTO, 0
    m = _FORCED.fullmatch(mode)
    if m is None:
        raise ValueError(f"mode: expected 'auto', 'nopdl' or 'c<C>-w<sw>-x<sx>[-xf]' (1, 2, 4, 8), got {mode!r}")
    cl, sw, sx = (int(g) for g in m.groups()[:3])
    if sw > cl or sx > cl:
        raise ValueError(f"mode: the CTAs per tile (w{sw}, x{sx}) cannot exceed the cluster size c{cl}")
    return (cl, sw, sx, 1 if m.group(4) else 0), 1


def plan_with(lib, batch: int, seq: int, num_sms: int, forced: tuple[int, ...]) -> dict[str, int] | None:
    out = (ctypes.c_longlong * len(PLAN_FIELDS))()
    f = (ctypes.c_int * len(AUTO))(*forced)
    if lib.kidxf_plan(int(batch), int(seq), int(num_sms), f, out, len(PLAN_FIELDS)) != len(PLAN_FIELDS):
        return None
    return dict(zip(PLAN_FIELDS, list(out)))


def plan(batch: int, seq: int, num_sms: int = 132, mode: str = "auto") -> dict[str, int]:
    forced, _ = parse_mode(mode)
    key = (int(batch), int(seq), int(num_sms), forced)
    if key not in _plans:
        p = plan_with(load(), batch, seq, num_sms, forced) if 5 * batch * seq <= MAX_ROWS else None
        if p is None:
            raise ValueError(f"ext-fused: no plan for B={batch}, S={seq}, sms={num_sms}, mode={mode!r}")
        _plans[key] = p
    return _plans[key]


def _num_sms(device) -> int:
    import torch

    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sms:
        _sms[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sms[idx]


def _launch(ins: list[Any], outs: tuple, b: int, s: int, mode: str, timeline=None) -> None:
    import torch

    forced, flags = parse_mode(mode)
    if 5 * b * s > MAX_ROWS:
        raise ValueError(f"grad_query: B·S = {b * s} tokens; ext-fused takes at most {MAX_ROWS // 5}")
    lib = load()
    device = ins[3].device
    with torch.cuda.device(device):
        sms = _num_sms(device)
        pl = plan(b, s, sms, mode)
        m = torch.empty(5 * b * s, dtype=torch.float32, device=device)
        partials = torch.empty((pl["stats_blocks"], 512), dtype=torch.float32, device=device)
        args = [t.data_ptr() for t in ins] + [t.data_ptr() for t in outs]
        args += [m.data_ptr(), partials.data_ptr(), b, s, sms, *forced, flags]
        if timeline is not None:  # lab only (debug.py): [grid, kidxf_timeline_words()] int64
            args.append(timeline.data_ptr())
        arr = (ctypes.c_ulonglong * len(args))(*args)
        rc = lib.kidxf_launch(arr, len(args), ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream))
        if rc != 0:
            raise RuntimeError(f"ext-fused launch failed: {lib.kidxf_error(rc).decode()}")


def _new_outputs(hs) -> tuple:
    import torch

    dw = torch.empty((1536, 640), dtype=hs.dtype, device=hs.device)
    return (torch.empty_like(hs), dw[:1024], dw[1024:1280], dw[1280:],
            torch.empty(256, dtype=torch.float32, device=hs.device),
            torch.empty(256, dtype=torch.float32, device=hs.device))


def qkv_qknorm_backward(*, mode: str = "auto", **inputs):
    parse_mode(mode)
    b, s = check_inputs(inputs, "cuda")
    outs = _new_outputs(inputs["hidden_states"])
    _launch(aligned_inputs(inputs), outs, b, s, mode)
    return outs


def qkv_qknorm_backward_out(outputs, *, mode: str = "auto", **inputs) -> None:
    parse_mode(mode)
    b, s = check_inputs(inputs, "cuda")
    check_outputs(outputs, b, s, inputs["hidden_states"].device, alignment=16)
    _launch(aligned_inputs(inputs), tuple(outputs), b, s, mode)
