"""ext-streamnorm: ext-cluster's cluster split-K GEMM kernel behind a leaner Q/K norm kernel
(csrc/stream_norm_sm90.cu, which includes csrc/cluster_sm90.cu unchanged; design at the top of
both files and in kernels/BENCHMARKS.md).

The norm kernel reads Q and K rows in memory order, two rows per warp step with the next two
steps' rows in flight through a cp.async ring, and tracks each row's (token, head) without a
division: about two thirds of ext-cluster's norm instructions per row, and more bytes in flight
per SM.

Entry points (arguments are checked in Python before any kernel runs; ValueError names the tensor):
  qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs (definition order)
  qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None (destination passing)

Modes: "auto" (ext-cluster's plan table), a forced GEMM plan "bm{128|256}-c{C}-w{sw}-x{sx}[-xf]"
(as in ext-cluster; its fused "-nN" plans are not offered), "nopdl"; "dbg-gemm" (no norm kernel)
and "dbg-norm" (no GEMM kernel) time the parts: their results are WRONG.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Any

from kernels.ops.qkv_qknorm_backward import ext_cluster
from kernels.ops.qkv_qknorm_backward.checks import check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.definition import OUTPUT_NAMES
from kernels.ops.qkv_qknorm_backward.nvcc_library import NvccLibrary

CSRC = Path(__file__).resolve().parent / "csrc"
LIBRARY = NvccLibrary("kidx_streamnorm", CSRC / "stream_norm_sm90.cu",
                      (CSRC / "cluster_sm90.cu", CSRC / "sm90_ptx.cuh"))
PLAN_FIELDS = ext_cluster.PLAN_FIELDS
MAX_TOKENS = (1 << 26) - 1  # the norm kernel indexes its 5T rows of 32 uint4 in int

_lock = threading.Lock()
_lib = None
_plans: dict[tuple, dict[str, int]] = {}


def load(verbose: bool = False):
    """Build (or reuse) the library and return it (ctypes.CDLL)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("ext-streamnorm needs a CUDA device")
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            raise RuntimeError(f"ext-streamnorm is built for sm_90a; this device is sm_{major}{minor}")
        lib = LIBRARY.open(verbose)
        declare(lib)
        _lib = lib
        return lib


def declare(lib) -> None:
    lib.kidxs_plan.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
    lib.kidxs_plan.restype = ctypes.c_int
    lib.kidxs_launch.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int, ctypes.c_void_p]
    lib.kidxs_launch.restype = ctypes.c_int
    lib.kidxc_error.argtypes = [ctypes.c_int]
    lib.kidxc_error.restype = ctypes.c_char_p


def parse_mode(mode: str) -> tuple[tuple[int, ...], int]:
    """mode -> (forced GEMM plan {bm, cluster, sw, sx, x_first, 0}, all zero for the planner's; flags)."""
    forced, flags = ext_cluster.parse_mode(mode)
    if forced[5] or flags & (ext_cluster.FLAG_NO_FENCE | ext_cluster.FLAG_NORM_ONLY):
        raise ValueError(f"mode: ext-streamnorm has no fused ('-n<N>') or '-dbg-' plans, got {mode!r}")
    return forced, flags


def plan_with(lib, tokens: int, num_sms: int, forced: tuple[int, ...]) -> dict[str, int] | None:
    """kidxs_plan through an opened library: the plan's fields, or None for bad arguments."""
    out = (ctypes.c_longlong * len(PLAN_FIELDS))()
    f = (ctypes.c_int * 6)(*forced)
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


def _launch(ins: list[Any], outs: tuple, b: int, s: int, mode: str, timelines: tuple = ()) -> None:
    import torch

    forced, flags = parse_mode(mode)
    if b * s > MAX_TOKENS:
        raise ValueError(f"grad_query: B·S = {b * s} tokens; ext-streamnorm takes at most {MAX_TOKENS}")
    lib = load()
    device = ins[3].device
    with torch.cuda.device(device):
        sms = ext_cluster._num_sms(device)
        pl = plan(b * s, sms, mode)
        gqk = torch.empty((b * s, ext_cluster.QK_COLS), dtype=torch.bfloat16, device=device)
        partials = torch.empty((pl["norm_blocks"], 512), dtype=torch.float32, device=device)
        args = [t.data_ptr() for t in ins] + [t.data_ptr() for t in outs]
        args += [gqk.data_ptr(), partials.data_ptr(), b, s, sms, *forced, flags, 0]
        args += [t.data_ptr() for t in timelines]
        arr = (ctypes.c_ulonglong * len(args))(*args)
        stream = torch.cuda.current_stream(device).cuda_stream
        rc = lib.kidxs_launch(arr, len(args), ctypes.c_void_p(stream))
        if rc != 0:
            raise RuntimeError(f"ext-streamnorm launch failed: {lib.kidxc_error(rc).decode()}")
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
    _launch(ext_cluster._aligned(inputs), outs, b, s, mode)
    return outs


def qkv_qknorm_backward_out(outputs, *, mode: str = "auto", **inputs) -> None:
    parse_mode(mode)
    b, s = check_inputs(inputs, "cuda")
    check_outputs(outputs, b, s, inputs["hidden_states"].device)
    for name, t in zip(OUTPUT_NAMES, outputs):
        if t.data_ptr() % 16 != 0:
            raise ValueError(f"{name}: output address must be 16-byte aligned")
    _launch(ext_cluster._aligned(inputs), tuple(outputs), b, s, mode)


def timeline(*, mode: str = "auto", **inputs):
    """Debugging: one call with globaltimer stamps, as ext_cluster.timeline (norm [blocks, 4],
    gemm [grid, 12])."""
    b, s = check_inputs(inputs, "cuda")
    import torch

    hs = inputs["hidden_states"]
    pl = plan(b * s, ext_cluster._num_sms(hs.device), mode)
    norm_tl = torch.zeros((pl["norm_blocks"], 4), dtype=torch.int64, device=hs.device)
    gemm_tl = torch.zeros((pl["grid"], 12), dtype=torch.int64, device=hs.device)
    outs = _new_outputs(hs)
    _launch(ext_cluster._aligned(inputs), outs, b, s, mode, (norm_tl, gemm_tl))
    return outs, norm_tl, gemm_tl
