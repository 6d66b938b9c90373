"""ext-fused: the Q/K RMSNorm backward and both projection GEMMs in one persistent sm_90a kernel
(csrc/fused_sm90.cu; design notes at the top of that file and in kernels/BENCHMARKS.md).

The CUDA code has no torch headers: it is compiled by nvcc into a small shared library (CUDA
runtime linked statically) and called through ctypes with raw device pointers and torch's current
stream, so it captures into CUDA graphs like any other launch. The library is built on first use
into $KERNELINDEX_BUILD_DIR/qkv_qknorm_backward_fused/ (default ~/.cache/kernelindex), named by a
digest of its sources and flags, and reused while they are unchanged.

Entry points (arguments are checked here, in Python, before any kernel runs; ValueError names the
tensor):
  qkv_qknorm_backward(**inputs, mode="auto") -> the six outputs (definition order)
  qkv_qknorm_backward_out(outputs, **inputs, mode="auto") -> None (destination passing)

Modes: "auto" (the registered one), "nopdl" (no programmatic dependent launch). The dbg-* modes
exist only to time parts of the kernel and their results are WRONG: "dbg-nowait" (the GEMM does not
wait for the norm), "dbg-gemm" (no norm at all), "dbg-empty" (zeroing kernel + an empty main
kernel: the launch floor), "dbg-empty1" (the empty main kernel alone).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from kernels.ops.qkv_qknorm_backward.checks import check_inputs, check_outputs
from kernels.ops.qkv_qknorm_backward.definition import INPUT_NAMES, OUTPUT_NAMES

CSRC = Path(__file__).resolve().parent / "csrc"
SOURCES = ["fused_sm90.cu"]
HEADERS = ["sm90_ptx.cuh"]
NVCC_FLAGS = [
    "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-lineinfo",
    "-Xcompiler", "-fPIC", "-shared", "-cudart", "static",
]
# mode -> (pdl, debug bits)
MODES = {"auto": (1, 0), "nopdl": (0, 0), "dbg-nowait": (1, 1), "dbg-gemm": (1, 3),
         "dbg-empty": (1, 4), "dbg-empty1": (1, 12)}
DEBUG_MODES = {"dbg-nowait", "dbg-gemm", "dbg-empty", "dbg-empty1"}
QK_COLS = 1280
PLAN_FIELDS = ("bm", "grid", "ntb", "counters", "workspace_floats", "npart_floats", "g_elems", "mx",
               "sx", "kbw", "sw", "nwt", "nxt", "nvt", "w_first", "predicted_ns")

DEBUG_FLAGS = ["-DKIDXF_TIMELINE"]  # the debug build: per-CTA globaltimer stamps (timeline())

_lock = threading.Lock()
_lib = None
_lib_dbg = None
_plans: dict[tuple[int, int], dict[str, int]] = {}
_sms: dict[int, int] = {}


def source_files() -> list[Path]:
    return [CSRC / name for name in SOURCES + HEADERS]


def _flags(debug: bool = False) -> list[str]:
    return NVCC_FLAGS + (DEBUG_FLAGS if debug else [])


def _digest(debug: bool = False) -> str:
    h = hashlib.sha256()
    for path in source_files():
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(" ".join(_flags(debug)).encode())
    return h.hexdigest()[:16]


def build_dir() -> Path:
    base = Path(os.environ.get("KERNELINDEX_BUILD_DIR", Path.home() / ".cache" / "kernelindex"))
    return base / "qkv_qknorm_backward_fused"


def library_path(debug: bool = False) -> Path:
    """Where the library for the current sources lives (built or not)."""
    return build_dir() / f"libkidx_fused_{'dbg_' if debug else ''}{_digest(debug)}.so"


def _nvcc() -> str:
    candidates = [os.environ.get("NVCC"), shutil.which("nvcc")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(str(Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for c in candidates:
        if c and os.path.exists(c):
            return c
    raise RuntimeError("ext-fused: nvcc not found (set CUDA_HOME or NVCC) to build the kernel library")


def build(verbose: bool = False, debug: bool = False) -> Path:
    """Compile the library (if the current sources have no build yet); return its path."""
    out = library_path(debug)
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.stem + ".", suffix=".so.tmp", dir=out.parent)
    os.close(fd)
    cmd = [_nvcc(), *_flags(debug), f"-I{CSRC}", str(CSRC / SOURCES[0]), "-o", tmp]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if verbose:
        print(" ".join(cmd), proc.stdout, proc.stderr, sep="\n")
    if proc.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(f"ext-fused: nvcc failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    os.replace(tmp, out)  # atomic: concurrent builders each produce the same file
    return out


def _open(path: Path):
    lib = ctypes.CDLL(str(path))
    lib.kidxf_plan.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.c_int,
                               ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]
    lib.kidxf_plan.restype = ctypes.c_int
    lib.kidxf_launch.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int, ctypes.c_void_p]
    lib.kidxf_launch.restype = ctypes.c_int
    lib.kidxf_error.argtypes = [ctypes.c_int]
    lib.kidxf_error.restype = ctypes.c_char_p
    return lib


def load(verbose: bool = False, debug: bool = False):
    """Build (or reuse) the library and return it (ctypes.CDLL)."""
    global _lib, _lib_dbg
    with _lock:
        if (_lib_dbg if debug else _lib) is not None:
            return _lib_dbg if debug else _lib
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("ext-fused needs a CUDA device")
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            raise RuntimeError(f"ext-fused is built for sm_90a; this device is sm_{major}{minor}")
        path = build(verbose, debug)
        try:
            lib = _open(path)
        except OSError:
            # A library built elsewhere that does not load here: build it again on this machine.
            path.unlink(missing_ok=True)
            lib = _open(build(verbose, debug))
        if debug:
            _lib_dbg = lib
        else:
            _lib = lib
        return lib


def plan(tokens: int, num_sms: int = 132) -> dict[str, int]:
    """The work plan for a token count (sizes of the scratch buffers, tiles, splits)."""
    key = (int(tokens), int(num_sms))
    if key not in _plans:
        out = (ctypes.c_longlong * 16)()
        n = load().kidxf_plan(key[0], key[1], 0, out, 16)
        if n != 16:
            raise ValueError(f"ext-fused: no plan for tokens={tokens}, sms={num_sms}")
        _plans[key] = dict(zip(PLAN_FIELDS, list(out)))
    return _plans[key]


def _mode(mode: str) -> tuple[int, int]:
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {sorted(MODES)}, got {mode!r}")
    return MODES[mode]


def _aligned(inputs: dict[str, Any]) -> list[Any]:
    # TMA and 16-byte loads need 16-byte aligned tensors: copy one that is not.
    return [t if t.data_ptr() % 16 == 0 else t.clone() for t in (inputs[n] for n in INPUT_NAMES)]


def _num_sms(device) -> int:
    import torch

    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _sms:
        _sms[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _sms[idx]


def _launch(ins: list[Any], outs: tuple, b: int, s: int, mode: str, tl: Any = None) -> None:
    import torch

    pdl, dbg = _mode(mode)
    lib = load(debug=tl is not None)
    device = ins[3].device
    with torch.cuda.device(device):
        sms = _num_sms(device)
        pl = plan(b * s, sms)
        g = torch.empty((b * s, QK_COLS), dtype=torch.bfloat16, device=device)
        ws = torch.empty(max(pl["workspace_floats"], 4), dtype=torch.float32, device=device)
        npart = torch.empty(pl["npart_floats"], dtype=torch.float32, device=device)
        counters = torch.empty(pl["counters"], dtype=torch.int32, device=device)
        ptrs = [t.data_ptr() for t in ins] + [t.data_ptr() for t in outs]
        ptrs += [g.data_ptr(), ws.data_ptr(), npart.data_ptr(), counters.data_ptr()]
        args = ptrs + [b, s, sms, 0, pdl, dbg, tl.data_ptr() if tl is not None else 0]
        arr = (ctypes.c_ulonglong * len(args))(*args)
        stream = torch.cuda.current_stream(device).cuda_stream
        rc = lib.kidxf_launch(arr, len(args), ctypes.c_void_p(stream))
        if rc != 0:
            raise RuntimeError(f"ext-fused launch failed: {lib.kidxf_error(rc).decode()}")
        # g, ws, npart and counters go back to torch's caching allocator, stream-ordered: the next
        # allocation on this stream reuses them only after the kernel has finished.


def qkv_qknorm_backward(*, mode: str = "auto", **inputs):
    b, s = check_inputs(inputs, "cuda")
    _mode(mode)
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
    b, s = check_inputs(inputs, "cuda")
    check_outputs(outputs, b, s, inputs["hidden_states"].device)
    for name, t in zip(OUTPUT_NAMES, outputs):
        if t.data_ptr() % 16 != 0:
            raise ValueError(f"{name}: output address must be 16-byte aligned")
    _mode(mode)
    _launch(_aligned(inputs), tuple(outputs), b, s, mode)


def timeline(*, mode: str = "auto", **inputs):
    """Debugging: one call through the debug build; returns (outputs, stamps [grid, 16] int64 of
    globaltimer ns: 0 entry, 1 producer's first loads issued, 2 consumers' first k-block ready,
    3/4 first item's mainloop/epilogue done, 5 consumers done, 6 norm warp 0's first group loaded,
    7 its last flag, 8 finalize done, 9 watcher saw all token blocks, 10 producer's first norm wait
    returned, 11 items done by the CTA; 0 = not reached)."""
    b, s = check_inputs(inputs, "cuda")
    import torch

    hs = inputs["hidden_states"]
    pl = plan(b * s, _num_sms(hs.device))
    tl = torch.zeros((pl["grid"], 16), dtype=torch.int64, device=hs.device)
    dw = torch.empty((1536, 640), dtype=hs.dtype, device=hs.device)
    outs = (torch.empty_like(hs), dw[:1024], dw[1024:1280], dw[1280:],
            torch.empty(256, dtype=torch.float32, device=hs.device),
            torch.empty(256, dtype=torch.float32, device=hs.device))
    _launch(_aligned(inputs), outs, b, s, mode, tl)
    return outs, tl
