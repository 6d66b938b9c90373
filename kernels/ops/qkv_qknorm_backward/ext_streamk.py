"""ext-streamk: ext-streamnorm's Q/K norm kernel, then one persistent stream-K wgmma GEMM kernel
(csrc/streamk_sm90.cu, which includes csrc/stream_norm_sm90.cu and csrc/cluster_sm90.cu unchanged;
design at the top of the .cu file and in kernels/BENCHMARKS.md).

One CTA per SM takes an equal share of all the k-blocks of both GEMMs (dW tiles with K = T and dX
tiles with K = 1536 alike); a tile shared by several CTAs is summed by the CTA holding its first
k-block, from the others' fp32 partials, in a fixed order (deterministic).

Entry points (arguments are checked in Python before any kernel runs; ValueError names the tensor):
  qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs (definition order)
  qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None (destination passing)

Modes: "auto" (the planner's tile rows and grid), a forced plan "bm{128|256}[-g{G}][-w{W}]" (tile
rows; G persistent CTAs, at most one per SM; W of them share dW's k-blocks and the rest dX's,
instead of all sharing all), "nopdl"; "dbg-gemm" (no norm kernel) and "dbg-norm" (no
GEMM kernel) time the parts, "dbg-nomemset" the call without zeroing the tile flags: their
results are WRONG.
"""

from __future__ import annotations

import ctypes
import re
import threading
from pathlib import Path
from typing import Any

from kernels.ops.qkv_qknorm_backward import ext_cluster
from kernels.ops.qkv_qknorm_backward.checks import check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.definition import OUTPUT_NAMES
from kernels.ops.qkv_qknorm_backward.nvcc_library import NvccLibrary

CSRC = Path(__file__).resolve().parent / "csrc"
LIBRARY = NvccLibrary("kidx_streamk", CSRC / "streamk_sm90.cu",
                      (CSRC / "stream_norm_sm90.cu", CSRC / "cluster_sm90.cu", CSRC / "sm90_ptx.cuh"))
PLAN_FIELDS = ("bm", "grid", "tiles", "units", "nwt", "nxt", "kbw", "workspace_floats", "norm_blocks",
               "max_share", "dw_ctas")
SEGMENT_FIELDS = ("tile", "is_w", "m0", "nt", "k0", "k1", "kt", "role")
ROLES = ("whole", "contributor", "owner")
MAX_TOKENS = (1 << 26) - 1  # the norm kernel indexes its 5T rows of 32 uint4 in int
FLAG_PDL, FLAG_NO_NORM, FLAG_NO_GEMM, FLAG_NO_MEMSET = 1, 2, 4, 8
_MODES = {"auto": FLAG_PDL, "nopdl": 0, "dbg-gemm": FLAG_NO_NORM, "dbg-norm": FLAG_PDL | FLAG_NO_GEMM,
          "dbg-nomemset": FLAG_PDL | FLAG_NO_MEMSET}
_FORCED = re.compile(r"bm(128|256)(?:-g([0-9]{1,4}))?(?:-w([0-9]{1,4}))?")

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
            raise RuntimeError("ext-streamk needs a CUDA device")
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            raise RuntimeError(f"ext-streamk is built for sm_90a; this device is sm_{major}{minor}")
        lib = LIBRARY.open(verbose)
        declare(lib)
        _lib = lib
        return lib


def declare(lib) -> None:
    lib.kidxk_plan.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
    lib.kidxk_plan.restype = ctypes.c_int
    lib.kidxk_segments.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
    lib.kidxk_segments.restype = ctypes.c_int
    lib.kidxk_launch.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int, ctypes.c_void_p]
    lib.kidxk_launch.restype = ctypes.c_int
    lib.kidxc_error.argtypes = [ctypes.c_int]
    lib.kidxc_error.restype = ctypes.c_char_p


def parse_mode(mode: str) -> tuple[tuple[int, int, int], int]:
    """mode -> ((tile rows, grid, dW CTAs), all zero for the planner's; launch flags)."""
    if mode in _MODES:
        return (0, 0, 0), _MODES[mode]
    m = _FORCED.fullmatch(mode)
    if m is None:
        raise ValueError(f"mode: expected auto, nopdl, dbg-gemm, dbg-norm, dbg-nomemset or "
                         f"bm{{128|256}}[-g<CTAs>][-w<dW CTAs>], got {mode!r}")
    return (int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)), FLAG_PDL


def plan_with(lib, tokens: int, num_sms: int, forced: tuple[int, int, int]) -> dict[str, int] | None:
    """kidxk_plan through an opened library: the plan's fields, or None for bad arguments."""
    out = (ctypes.c_longlong * len(PLAN_FIELDS))()
    f = (ctypes.c_int * 3)(*forced)
    if lib.kidxk_plan(int(tokens), int(num_sms), f, out, len(PLAN_FIELDS)) != len(PLAN_FIELDS):
        return None
    return dict(zip(PLAN_FIELDS, list(out)))


def segments_with(lib, tokens: int, num_sms: int, forced: tuple[int, int, int],
                  cta: int) -> list[dict[str, int]] | None:
    """The schedule of one CTA (its segments in order), or None for bad arguments."""
    f = (ctypes.c_int * 3)(*forced)
    n = lib.kidxk_segments(int(tokens), int(num_sms), f, int(cta), None, 0)
    if n < 0:
        return None
    out = (ctypes.c_longlong * (8 * n))()
    lib.kidxk_segments(int(tokens), int(num_sms), f, int(cta), out, n)
    vals = list(out)
    return [dict(zip(SEGMENT_FIELDS, vals[8 * i:8 * i + 8])) for i in range(n)]


def plan(tokens: int, num_sms: int = 132, mode: str = "auto") -> dict[str, int]:
    """The work plan for a token count (tile rows, grid, tiles, units, workspace; norm blocks)."""
    forced, _ = parse_mode(mode)
    key = (int(tokens), int(num_sms), forced)
    if key not in _plans:
        p = plan_with(load(), tokens, num_sms, forced) if 1 <= tokens <= MAX_TOKENS else None
        if p is None:
            raise ValueError(f"mode: no ext-streamk plan for tokens={tokens}, sms={num_sms}, mode={mode!r} "
                             f"(at most one CTA per SM and per k-block)")
        _plans[key] = p
    return _plans[key]


def _launch(ins: list[Any], outs: tuple, b: int, s: int, mode: str, timelines: tuple = ()) -> None:
    import torch

    forced, flags = parse_mode(mode)
    if b * s > MAX_TOKENS:
        raise ValueError(f"grad_query: B·S = {b * s} tokens; ext-streamk takes at most {MAX_TOKENS}")
    lib = load()
    device = ins[3].device
    with torch.cuda.device(device):
        sms = ext_cluster._num_sms(device)
        pl = plan(b * s, sms, mode)
        gqk = torch.empty((b * s, ext_cluster.QK_COLS), dtype=torch.bfloat16, device=device)
        partials = torch.empty((pl["norm_blocks"], 512), dtype=torch.float32, device=device)
        workspace = torch.empty(pl["workspace_floats"], dtype=torch.float32, device=device)
        tile_flags = torch.empty(pl["tiles"], dtype=torch.int32, device=device)  # zeroed by the launch
        args = [t.data_ptr() for t in ins] + [t.data_ptr() for t in outs]
        args += [gqk.data_ptr(), partials.data_ptr(), b, s, sms, *forced, flags, workspace.data_ptr(),
                 tile_flags.data_ptr()]
        args += [t.data_ptr() for t in timelines]
        arr = (ctypes.c_ulonglong * len(args))(*args)
        stream = torch.cuda.current_stream(device).cuda_stream
        rc = lib.kidxk_launch(arr, len(args), ctypes.c_void_p(stream))
        if rc != 0:
            raise RuntimeError(f"ext-streamk launch failed: {lib.kidxc_error(rc).decode()}")
        # The temporaries go back to torch's caching allocator, stream-ordered: the next
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
    """Debugging: one call with globaltimer stamps: norm [blocks, 4] (entry, exit, SM), GEMM
    [grid, 12] (see kidxk_launch in csrc/streamk_sm90.cu)."""
    b, s = check_inputs(inputs, "cuda")
    import torch

    hs = inputs["hidden_states"]
    pl = plan(b * s, ext_cluster._num_sms(hs.device), mode)
    norm_tl = torch.zeros((pl["norm_blocks"], 4), dtype=torch.int64, device=hs.device)
    gemm_tl = torch.zeros((pl["grid"], 12), dtype=torch.int64, device=hs.device)
    outs = _new_outputs(hs)
    _launch(ext_cluster._aligned(inputs), outs, b, s, mode, (norm_tl, gemm_tl))
    return outs, norm_tl, gemm_tl
