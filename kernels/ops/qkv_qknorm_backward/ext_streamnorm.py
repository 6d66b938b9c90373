"""ext-streamnorm: a streaming Q/K norm kernel, then a cluster split-K wgmma GEMM kernel, on sm_90a
(csrc/stream_norm_sm90.cu, csrc/cluster_gemm_sm90.cu, host API csrc/ext_streamnorm.cu; design at
the top of each file and in kernels/BENCHMARKS.md).

The norm kernel reads Q and K rows in memory order, two rows per warp step with the next two
steps' rows in flight through a cp.async ring, and writes GQK = [GQ|GK]; the GEMM kernel computes
dX = [GQK|GV]·W and dW = [GQK|GV]ᵀ·X, split-K across the CTAs of a cluster with the partial tiles
summed through distributed shared memory, chained to the norm kernel by programmatic dependent
launch.

Entry points (arguments are checked in Python before any kernel runs; ValueError names the tensor):
  qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs (definition order)
  qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None (destination passing)

Modes: "auto" (the plan table measured on the H200), a forced GEMM plan
"bm{128|256}-c{C}-w{sw}-x{sx}[-xf]" (tile rows, cluster size, CTAs per dW tile, per dX tile, C, sw,
sx in 1, 2, 4, 8; -xf launches the dX tiles first), "nopdl". (Timing the parts alone and the
kernels' timelines are lab/qkv_qknorm_backward/debug.py's, through `_launch`.)
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

from kernels.ops.qkv_qknorm_backward.checks import aligned_inputs, check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.nvcc_library import CSRC, NvccLibrary

PLAN_FIELDS = ("bm", "cluster", "sw", "sx", "x_first", "grid", "ncw", "ncx", "nwt", "nxt", "norm_blocks")
QK_COLS = 1280
MAX_TOKENS = (1 << 26) - 1  # the norm kernel indexes its 5T rows of 32 uint4 in int
FLAG_PDL, FLAG_NO_NORM, FLAG_NO_GEMM = 1, 2, 4
AUTO = (0, 0, 0, 0, 0)
_FORCED = re.compile(r"bm(128|256)-c([1248])-w([1248])-x([1248])(-xf)?")


def declare(lib) -> None:
    lib.kidxs_plan.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
    lib.kidxs_plan.restype = ctypes.c_int
    lib.kidxs_launch.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int, ctypes.c_void_p]
    lib.kidxs_launch.restype = ctypes.c_int
    lib.kidxs_error.argtypes = [ctypes.c_int]
    lib.kidxs_error.restype = ctypes.c_char_p


LIBRARY = NvccLibrary(
    "kidx_streamnorm",
    (CSRC / "stream_norm_sm90.cu", CSRC / "cluster_gemm_sm90.cu", CSRC / "ext_streamnorm.cu"),
    tuple(CSRC / h for h in ("stream_norm.h", "cluster_gemm.h", "common/ptx.cuh", "common/sm90.cuh",
                             "common/tensor_map.cuh", "common/pipeline.cuh", "common/epilogue.cuh",
                             "common/launch.cuh")),
    architectures=("sm_90",),
    declare=declare,
)

_plans: dict[tuple, dict[str, int]] = {}
_sms: dict[int, int] = {}


def load(verbose: bool = False):
    """Build (or reuse) the library and return it (ctypes.CDLL)."""
    return LIBRARY.load(verbose)


def parse_mode(mode: str) -> tuple[tuple[int, ...], int]:
    """mode -> (forced GEMM plan {bm, cluster, sw, sx, x_first}, all zero for the planner's; flags)."""
    if mode == "auto":
        return AUTO, FLAG_PDL
    if mode == "nopdl":
        return AUTO, 0
    m = _FORCED.fullmatch(mode)
    if m is None:
        raise ValueError(f"mode: expected 'auto', 'nopdl' or "
                         f"'bm<128|256>-c<C>-w<sw>-x<sx>[-xf]' (C, sw, sx in 1, 2, 4, 8), got {mode!r}")
    bm, cl, sw, sx = (int(g) for g in m.groups()[:4])
    if sw > cl or sx > cl:
        raise ValueError(f"mode: the CTAs per tile (w{sw}, x{sx}) cannot exceed the cluster size c{cl}")
    return (bm, cl, sw, sx, 1 if m.group(5) else 0), FLAG_PDL


def plan_with(lib, tokens: int, num_sms: int, forced: tuple[int, ...]) -> dict[str, int] | None:
    """kidxs_plan through an opened library: the plan's fields, or None for bad arguments."""
    out = (ctypes.c_longlong * len(PLAN_FIELDS))()
    f = (ctypes.c_int * len(AUTO))(*forced)
    if lib.kidxs_plan(int(tokens), int(num_sms), f, out, len(PLAN_FIELDS)) != len(PLAN_FIELDS):
        return None
    return dict(zip(PLAN_FIELDS, list(out)))


def plan(tokens: int, num_sms: int = 132, mode: str = "auto") -> dict[str, int]:
    """The work plan for a token count (GEMM tiles, cluster, splits, grid; norm blocks)."""
    forced, _ = parse_mode(mode)
    key = (int(tokens), int(num_sms), forced)
    if key not in _plans:
        p = plan_with(load(), tokens, num_sms, forced) if 1 <= tokens <= MAX_TOKENS else None
        if p is None:
            raise ValueError(f"ext-streamnorm: no plan for tokens={tokens}, sms={num_sms}, mode={mode!r}")
        _plans[key] = p
    return _plans[key]


def _num_sms(device) -> int:
    import torch

    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sms:
        _sms[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sms[idx]


def _launch(ins: list[Any], outs: tuple, b: int, s: int, mode: str, timelines: tuple = (), flags: int | None = None) -> None:
    """`flags` (lab only) replaces the mode's FLAG_* bits; `timelines`: globaltimer stamp tensors."""
    import torch

    forced, mode_flags = parse_mode(mode)
    flags = mode_flags if flags is None else flags
    if b * s > MAX_TOKENS:
        raise ValueError(f"grad_query: B·S = {b * s} tokens; ext-streamnorm takes at most {MAX_TOKENS}")
    lib = load()
    device = ins[3].device
    with torch.cuda.device(device):
        sms = _num_sms(device)
        pl = plan(b * s, sms, mode)
        gqk = torch.empty((b * s, QK_COLS), dtype=torch.bfloat16, device=device)
        partials = torch.empty((pl["norm_blocks"], 512), dtype=torch.float32, device=device)
        args = [t.data_ptr() for t in ins] + [t.data_ptr() for t in outs]
        args += [gqk.data_ptr(), partials.data_ptr(), b, s, sms, *forced, flags]
        args += [t.data_ptr() for t in timelines]
        arr = (ctypes.c_ulonglong * len(args))(*args)
        stream = torch.cuda.current_stream(device).cuda_stream
        rc = lib.kidxs_launch(arr, len(args), ctypes.c_void_p(stream))
        if rc != 0:
            raise RuntimeError(f"ext-streamnorm launch failed: {lib.kidxs_error(rc).decode()}")
        # gqk and partials go back to torch's caching allocator, stream-ordered: the next
        # allocation on this stream reuses them only after these kernels have finished.


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
