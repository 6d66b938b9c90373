"""ext-cluster: the norm kernel + a cluster split-K wgmma GEMM kernel on sm_90a
(csrc/cluster_sm90.cu; design at the top of that file and in kernels/BENCHMARKS.md).

The CUDA code has no torch headers: nvcc builds it into a small shared library (nvcc_library.py),
called through ctypes with raw device pointers on torch's current stream, so it captures into CUDA
graphs like any other launch.

Entry points (arguments are checked in Python before any kernel runs; ValueError names the tensor):
  qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs (definition order)
  qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None (destination passing)

Modes: "auto" (the planner's tiles), a forced plan "bm{128|256}-c{C}-w{sw}-x{sx}[-xf][-n{N}]" (tile
rows, cluster size, CTAs per dW tile, per dX tile; -xf launches the dX tiles first; -nN: fused mode,
the norm done by N CTAs of the GEMM grid in token order, GEMM tiles waiting per token block instead
of for a separate norm kernel), and "nopdl".
"dbg-gemm" (no norm kernel) and "dbg-norm" (no GEMM kernel) time the parts: their results are WRONG.
"""

from __future__ import annotations

import ctypes
import re
import threading
from pathlib import Path
from typing import Any

from kernels.ops.qkv_qknorm_backward.checks import check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.definition import INPUT_NAMES, OUTPUT_NAMES
from kernels.ops.qkv_qknorm_backward.nvcc_library import NvccLibrary

CSRC = Path(__file__).resolve().parent / "csrc"
LIBRARY = NvccLibrary("kidx_cluster", CSRC / "cluster_sm90.cu", (CSRC / "sm90_ptx.cuh",))
QK_COLS = 1280
PLAN_FIELDS = ("bm", "cluster", "sw", "sx", "x_first", "grid", "ncw", "ncx", "nwt", "nxt",
               "norm_blocks", "norm_ctas")
FLAG_PDL, FLAG_NO_NORM, FLAG_NO_GEMM, FLAG_NO_FENCE, FLAG_NORM_ONLY = 1, 2, 4, 8, 16
DEBUG_MODES = {"dbg-gemm": FLAG_PDL | FLAG_NO_NORM, "dbg-norm": FLAG_PDL | FLAG_NO_GEMM}
_FORCED = re.compile(r"bm(128|256)-c([1248])-w([1248])-x([1248])(-xf)?(?:-n([0-9]{1,3}))?(-dbg-nofence)?(-dbg-normonly)?")
_AUTO = (0, 0, 0, 0, 0, 0)

_lock = threading.Lock()
_lib = None
_plans: dict[tuple, dict[str, int]] = {}
_sms: dict[int, int] = {}


def source_files() -> list[Path]:
    return LIBRARY.files()


def load(verbose: bool = False):
    """Build (or reuse) the library and return it (ctypes.CDLL)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("ext-cluster needs a CUDA device")
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            raise RuntimeError(f"ext-cluster is built for sm_90a; this device is sm_{major}{minor}")
        lib = LIBRARY.open(verbose)
        _declare(lib)
        _lib = lib
        return lib


def _declare(lib) -> None:
    lib.kidxc_plan.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
    lib.kidxc_plan.restype = ctypes.c_int
    lib.kidxc_launch.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int, ctypes.c_void_p]
    lib.kidxc_launch.restype = ctypes.c_int
    lib.kidxc_error.argtypes = [ctypes.c_int]
    lib.kidxc_error.restype = ctypes.c_char_p


def parse_mode(mode: str) -> tuple[tuple[int, ...], int]:
    """mode -> (forced plan {bm, cluster, sw, sx, x_first, norm CTAs}, all zero for the planner's;
    flags)."""
    if mode == "auto":
        return _AUTO, FLAG_PDL
    if mode == "nopdl":
        return _AUTO, 0
    if mode in DEBUG_MODES:
        return _AUTO, DEBUG_MODES[mode]
    m = _FORCED.fullmatch(mode)
    if m is None:
        raise ValueError(
            f"mode: expected 'auto', 'nopdl', 'dbg-gemm', 'dbg-norm' or "
            f"'bm<128|256>-c<C>-w<sw>-x<sx>[-xf][-n<norm CTAs>]' (C, sw, sx in 1, 2, 4, 8), got {mode!r}")
    bm, cl, sw, sx = (int(g) for g in m.groups()[:4])
    if sw > cl or sx > cl:
        raise ValueError(f"mode: the CTAs per tile (w{sw}, x{sx}) cannot exceed the cluster size c{cl}")
    flags = FLAG_PDL | (FLAG_NO_FENCE if m.group(7) else 0) | (FLAG_NORM_ONLY if m.group(8) else 0)
    return (bm, cl, sw, sx, 1 if m.group(5) else 0, int(m.group(6) or 0)), flags


def plan(tokens: int, num_sms: int = 132, mode: str = "auto") -> dict[str, int]:
    """The work plan for a token count (tiles, cluster, splits, grid, norm blocks)."""
    forced, _ = parse_mode(mode)
    key = (int(tokens), int(num_sms), forced)
    if key not in _plans:
        out = (ctypes.c_longlong * len(PLAN_FIELDS))()
        f = (ctypes.c_int * 6)(*forced)
        if load().kidxc_plan(key[0], key[1], f, out, len(PLAN_FIELDS)) != len(PLAN_FIELDS):
            raise ValueError(f"ext-cluster: no plan for tokens={tokens}, sms={num_sms}, mode={mode!r}")
        _plans[key] = dict(zip(PLAN_FIELDS, list(out)))
    return _plans[key]


def _aligned(inputs: dict[str, Any]) -> list[Any]:
    # TMA and 16-byte loads need 16-byte aligned tensors: copy one that is not.
    return [t if t.data_ptr() % 16 == 0 else t.clone() for t in (inputs[n] for n in INPUT_NAMES)]


def _num_sms(device) -> int:
    import torch

    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sms:
        _sms[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sms[idx]


def _launch(ins: list[Any], outs: tuple, b: int, s: int, mode: str, timelines: tuple = ()) -> None:
    import torch

    forced, flags = parse_mode(mode)
    lib = load()
    device = ins[3].device
    with torch.cuda.device(device):
        sms = _num_sms(device)
        pl = plan(b * s, sms, mode)
        gqk = torch.empty((b * s, QK_COLS), dtype=torch.bfloat16, device=device)
        partials = torch.empty((pl["norm_blocks"], 512), dtype=torch.float32, device=device)
        # Fused plans: per-token-block counts of finished norm rows (+ finished norm CTAs).
        token_flags = (torch.zeros((b * s + 63) // 64 + 1, dtype=torch.int32, device=device)
                       if pl["norm_ctas"] else None)
        args = [t.data_ptr() for t in ins] + [t.data_ptr() for t in outs]
        args += [gqk.data_ptr(), partials.data_ptr(), b, s, sms, *forced, flags,
                 token_flags.data_ptr() if token_flags is not None else 0]
        args += [t.data_ptr() for t in timelines]
        arr = (ctypes.c_ulonglong * len(args))(*args)
        stream = torch.cuda.current_stream(device).cuda_stream
        rc = lib.kidxc_launch(arr, len(args), ctypes.c_void_p(stream))
        if rc != 0:
            raise RuntimeError(f"ext-cluster launch failed: {lib.kidxc_error(rc).decode()}")
        # gqk and partials go back to torch's caching allocator, stream-ordered: the next
        # allocation on this stream reuses them only after these kernels have finished.


def qkv_qknorm_backward(*, mode: str = "auto", **inputs):
    parse_mode(mode)
    b, s = check_inputs(inputs, "cuda")
    import torch

    hs = inputs["hidden_states"]
    dx = torch.empty_like(hs)
    dw = torch.empty((1536, 640), dtype=hs.dtype, device=hs.device)
    outs = (
        dx, dw[:1024], dw[1024:1280], dw[1280:],
        torch.empty(256, dtype=torch.float32, device=hs.device),
        torch.empty(256, dtype=torch.float32, device=hs.device),
    )
    _launch(_aligned(inputs), outs, b, s, mode)
    return outs


def qkv_qknorm_backward_out(outputs, *, mode: str = "auto", **inputs) -> None:
    parse_mode(mode)
    b, s = check_inputs(inputs, "cuda")
    check_outputs(outputs, b, s, inputs["hidden_states"].device)
    for name, t in zip(OUTPUT_NAMES, outputs):
        if t.data_ptr() % 16 != 0:
            raise ValueError(f"{name}: output address must be 16-byte aligned")
    _launch(_aligned(inputs), tuple(outputs), b, s, mode)


def timeline(*, mode: str = "auto", **inputs):
    """Debugging: one call with globaltimer stamps; returns (outputs, norm [blocks, 4] int64:
    entry, exit, SM; gemm [grid, 12] int64: 0 entry, 1 SM, 2 B tiles issued, 3 norm wait returned,
    4 first k-block arrived, 5 mainloop done, 6 partials visible in the cluster, 7 sums stored,
    8 exit, 9 k-blocks, 10 is dW; 0 = not reached)."""
    b, s = check_inputs(inputs, "cuda")
    import torch

    hs = inputs["hidden_states"]
    pl = plan(b * s, _num_sms(hs.device), mode)
    norm_tl = torch.zeros((pl["norm_blocks"], 4), dtype=torch.int64, device=hs.device)
    gemm_tl = torch.zeros((pl["grid"], 12), dtype=torch.int64, device=hs.device)
    dw = torch.empty((1536, 640), dtype=hs.dtype, device=hs.device)
    outs = (torch.empty_like(hs), dw[:1024], dw[1024:1280], dw[1280:],
            torch.empty(256, dtype=torch.float32, device=hs.device),
            torch.empty(256, dtype=torch.float32, device=hs.device))
    _launch(_aligned(inputs), outs, b, s, mode, (norm_tl, gemm_tl))
    return outs, norm_tl, gemm_tl
