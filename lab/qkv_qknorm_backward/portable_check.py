"""ext-portable on a GPU, in one call: what the library holds (cuobjdump --list-elf), correctness of
every schedule on the 16 cases and the odd shapes (fresh seeded inputs, random norm weights, both
entry points, NaN-poisoned outputs, run twice: bitwise equal), then graph-replay medians (L2 flushed)
side by side with cuBLAS's two GEMMs alone and other implementations, and kernel timelines of one
replay (torch.profiler, per stream) at chosen token counts.

  python lab/qkv_qknorm_backward/portable_check.py OUT.json [--samples 30] [--modes serial,split,chunk2,chunk4]
        [--others ext-streamnorm,ext-hybrid] [--timeline 8192:chunk2,1024:split] [--no-check] [--blas cublaslt]
(a mode "dbg-norm[-cN]" is the norm kernel alone, debug.py's: timed, not checked, its GEMM outputs are wrong)

Prints a table last; everything goes to OUT.json.
"""

from __future__ import annotations

import importlib
import json
import math
import shutil
import subprocess
import sys
import traceback


def _arg(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def _check_all(impl, modes: list[str], result: dict) -> bool:
    import oracle  # beside this script
    import torch

    from kernels.harness.correctness import Tolerance
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward.inputs import allocate_outputs, make_inputs
    from kernels.ops.qkv_qknorm_backward.reference import reference_fp32

    tol = Tolerance()
    ok_all = True
    for i, (b, s) in enumerate(list(d.CASE_SHAPES) + oracle.ODD_SHAPES):
        inputs = make_inputs(b, s, seed=31_000 + 7 * i, device="cuda")
        ref = reference_fp32(**inputs)
        for mode in modes:
            try:
                outs = allocate_outputs(b, s, "cuda")
                impl.qkv_qknorm_backward_out(outs, mode=mode, **inputs)
                first = impl.qkv_qknorm_backward(mode=mode, **inputs)
                again = impl.qkv_qknorm_backward(mode=mode, **inputs)
                torch.cuda.synchronize()
                ok1, f1, rel = oracle.check(outs, ref, tol)
                ok2, f2, _ = oracle.check(first, ref, tol, "(fn)")
                repeat = [n for n, x, y in zip(d.OUTPUT_NAMES, first, again) if not torch.equal(x, y)]
                between = [n for n, x, y in zip(d.OUTPUT_NAMES, outs, first) if not torch.equal(x, y)]
                entry = {
                    "passed": ok1 and ok2,
                    "deterministic": not repeat and not between,
                    "failures": f1 + f2,
                    "differ_run_to_run": repeat,
                    "differ_between_entry_points": between,
                    "max_rel_l2": max(rel.values()),
                }
            except Exception as exc:  # noqa: BLE001 - reported, the check goes on
                entry = {
                    "passed": False,
                    "deterministic": False,
                    "failures": [f"{type(exc).__name__}: {exc}"],
                    "trace": traceback.format_exc()[-1500:],
                }
            result["correctness"].append({"B": b, "S": s, "mode": mode, **entry})
            if not (entry["passed"] and entry["deterministic"]):
                ok_all = False
                print(
                    f"FAIL B={b} S={s} {mode}: {entry['failures'][:3]} run-to-run {entry.get('differ_run_to_run')} "
                    f"entry points {entry.get('differ_between_entry_points')}",
                    flush=True,
                )
    n = len(result["correctness"])
    good = sum(1 for e in result["correctness"] if e["passed"] and e["deterministic"])
    worst = max((e.get("max_rel_l2", 1.0) for e in result["correctness"]), default=0)
    print(f"correctness: {good}/{n} (shape, mode) pairs passed and bitwise repeatable; worst rel L2 {worst:.2e}", flush=True)
    return ok_all


def _timeline(impl, tokens: int, mode: str) -> list[dict]:
    """Kernels of one graph replay (L2 flushed before it), start/end in µs from the first."""
    import torch
    from debug import portable_call  # beside this script
    from torch.profiler import ProfilerActivity, profile

    from kernels.harness import timing
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    inputs = make_inputs(1, tokens, seed=5, device="cuda")
    fn = portable_call(mode)
    fn(**inputs)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        keep = fn(**inputs)
    flush = timing.L2Flush()
    graph.replay()
    torch.cuda.synchronize()
    flush()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    del keep
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
    kernels.sort(key=lambda e: e.time_range.start)
    if not kernels:
        return []
    t0 = kernels[0].time_range.start
    return [
        {"name": e.name[:90], "start_us": round(e.time_range.start - t0, 2), "end_us": round(e.time_range.end - t0, 2)} for e in kernels
    ]


def main() -> int:
    out_path = sys.argv[1]
    argv = sys.argv[2:]
    samples = int(_arg(argv, "--samples", "30"))
    modes = _arg(argv, "--modes", "serial,split,chunk2,chunk4").split(",")
    others = [o for o in _arg(argv, "--others", "ext-streamnorm").split(",") if o]
    timelines = [t.split(":") for t in _arg(argv, "--timeline", "").split(",") if t]
    import torch
    from debug import portable_call  # beside this script
    from limits import gemm_inputs, two_gemms

    from kernels.harness import timing
    from kernels.implementations import get
    from kernels.ops.qkv_qknorm_backward import definition as d
    from kernels.ops.qkv_qknorm_backward import ext_portable as impl
    from kernels.ops.qkv_qknorm_backward.inputs import make_inputs

    torch.backends.cuda.matmul.allow_tf32 = False
    if "--blas" in argv:  # e.g. cublaslt: torch's GEMMs (ours and the baseline's) through that library
        torch.backends.cuda.preferred_blas_library(_arg(argv, "--blas", "cublas"))
    major, minor = torch.cuda.get_device_capability()
    result: dict = {
        "gpu": torch.cuda.get_device_name(0),
        "capability": f"sm_{major}{minor}",
        "torch": torch.__version__,
        "modes": modes,
        "samples": samples,
        "correctness": [],
        "timing": {},
        "timelines": {},
    }
    lib_path = impl.LIBRARY.build()
    impl.load()
    if shutil.which("cuobjdump"):
        elf = subprocess.run(["cuobjdump", "--list-elf", str(lib_path)], capture_output=True, text=True)
        result["cuobjdump_list_elf"] = elf.stdout.strip().splitlines()
        print("cuobjdump --list-elf:", *result["cuobjdump_list_elf"], sep="\n  ", flush=True)
    ok = True
    if "--no-check" not in argv:
        ok = _check_all(impl, [m for m in modes if not m.startswith("dbg-")] + ["auto"], result)

    flush = timing.L2Flush()
    entry = {}
    for name in others:
        module, _, func = get(name).entry_point.partition(":")
        entry[name] = getattr(importlib.import_module(module), func)

    cols = ["cublas_gemms", *[f"portable:{m}" for m in modes + ["auto"]], *others]
    for i, (b, s) in enumerate(d.CASE_SHAPES):
        t = b * s
        row: dict = {"B": b, "S": s, "T": t}
        gemm_in = gemm_inputs(t)
        row["cublas_gemms"] = timing.stats(timing.time_graph(two_gemms, gemm_in, warmups=10, samples=samples, flush=flush))["median"]
        inputs = make_inputs(b, s, seed=4000 + i, device="cuda")
        for m in modes + ["auto"]:
            fn = portable_call(m)
            row[f"portable:{m}"] = timing.stats(timing.time_graph(fn, inputs, warmups=10, samples=samples, flush=flush))["median"]
        for name, fn in entry.items():
            row[name] = timing.stats(timing.time_graph(fn, inputs, warmups=10, samples=samples, flush=flush))["median"]
        result["timing"][str(i)] = row
        print(f"case {i:2d} T={t:5d} " + " ".join(f"{c.removeprefix('portable:')} {row[c] / 1e3:6.2f}" for c in cols), flush=True)

    rows = list(result["timing"].values())
    geo = {c: math.exp(sum(math.log(r[c]) for r in rows) / len(rows)) / 1e3 for c in cols}
    at8192 = {c: min(r[c] for r in rows if r["T"] == 8192) / 1e3 for c in cols}
    result["geomean_us"] = {c: round(v, 3) for c, v in geo.items()}
    result["t8192_us"] = {c: round(v, 3) for c, v in at8192.items()}
    for tokens, mode in timelines:
        try:
            result["timelines"][f"{tokens}:{mode}"] = _timeline(impl, int(tokens), mode)
        except Exception as exc:  # noqa: BLE001
            result["timelines"][f"{tokens}:{mode}"] = [{"error": f"{type(exc).__name__}: {exc}"[:300]}]
    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=1)
    print("| | " + " | ".join(c.removeprefix("portable:") for c in cols) + " |")
    print("|---|" + "---|" * len(cols))
    print("| geomean µs | " + " | ".join(f"{geo[c]:.2f}" for c in cols) + " |")
    print("| ÷ cuBLAS GEMMs | " + " | ".join(f"{geo[c] / geo['cublas_gemms']:.3f}" for c in cols) + " |")
    print("| T=8192 µs | " + " | ".join(f"{at8192[c]:.2f}" for c in cols) + " |")
    print("| ÷ cuBLAS GEMMs | " + " | ".join(f"{at8192[c] / at8192['cublas_gemms']:.3f}" for c in cols) + " |")
    for key, events in result["timelines"].items():
        print(
            f"timeline {key}: "
            + "; ".join(f"{e.get('name', e.get('error', ''))[:28]} {e.get('start_us', '')}-{e.get('end_us', '')}" for e in events)
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
