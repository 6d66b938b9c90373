"""Runs implementations over a workload's cases: correctness rounds, then timing, case by case
(implementations interleaved within a case)."""

from __future__ import annotations

import gc
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernels.harness import gpus, timing
from kernels.harness.correctness import CaseCheck, check_case, round_seed
from kernels.harness.protocol import Settings
from kernels.implementations import Implementation


@dataclass
class CaseRecord:
    index: int
    batch: int
    seq: int
    tokens: int
    flops: int
    min_bytes: int
    sol_ns: int | None
    check: CaseCheck | None = None
    samples_ns: list[int] = field(default_factory=list)
    eager_ns: list[int] = field(default_factory=list)
    error: str | None = None

    @property
    def median_ns(self) -> int | None:
        return timing.stats(self.samples_ns).get("median")

    @property
    def eager_median_ns(self) -> int | None:
        return timing.stats(self.eager_ns).get("median")


@dataclass
class ImplRecord:
    impl: Implementation
    cases: list[CaseRecord] = field(default_factory=list)
    load_error: str | None = None
    seconds: float = 0.0


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_benchmark(
    op: Any,
    impls: list[Implementation],
    shapes: list[tuple[int, int]],
    settings: Settings,
    log: Callable[[str], None] = _log,
) -> tuple[dict[str, ImplRecord], str | None]:
    """Returns ({impl name: record}, GPU product or None on the CPU)."""
    import torch

    device = settings.device
    product = None
    flush = None
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda: no CUDA device is available")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        product = torch.cuda.get_device_name(0)
        flush = timing.L2Flush()
    else:
        torch.set_num_threads(1)  # steadier wall-clock numbers in the CPU smoke mode

    records: dict[str, ImplRecord] = {}
    callables: dict[str, tuple[Callable, Callable | None]] = {}
    for impl in impls:
        rec = ImplRecord(impl)
        records[impl.name] = rec
        if device not in impl.devices:
            rec.load_error = f"{impl.name} does not run on {device}"
            log(f"[skip] {rec.load_error}")
            continue
        t0 = time.time()
        try:
            impl.prepare()
            callables[impl.name] = (impl.load(), impl.load_out())
        except Exception as exc:
            rec.load_error = f"{type(exc).__name__}: {exc}"
            log(f"[fail] {impl.name} did not load: {rec.load_error}")
            log(traceback.format_exc())
        rec.seconds += time.time() - t0

    definition = op.definition
    for index, (b, s) in enumerate(shapes):
        flops = definition.flops(b, s)
        nbytes = definition.min_bytes(b, s)
        sol = gpus.sol_ns(flops, nbytes, product) if product else None
        for impl in impls:
            rec = records[impl.name]
            case = CaseRecord(index, b, s, b * s, flops, nbytes, sol)
            rec.cases.append(case)
            if impl.name not in callables:
                case.error = rec.load_error
                continue
            call, call_out = callables[impl.name]
            t0 = time.time()
            try:
                case.check = check_case(
                    op=op,
                    call=call,
                    call_out=call_out,
                    batch=b,
                    seq=s,
                    case_index=index,
                    rounds=settings.rounds,
                    base_seed=settings.seed,
                    device=device,
                    tol=settings.tolerance,
                )
                inputs = op.make_inputs(b, s, round_seed(settings.seed, index, 10_000), device)
                if device == "cuda":
                    case.samples_ns = timing.time_graph(call, inputs, warmups=settings.warmups, samples=settings.samples, flush=flush)
                    case.eager_ns = timing.time_eager(call, inputs, warmups=settings.warmups, samples=settings.samples, flush=flush)
                else:
                    case.samples_ns = timing.time_wall(call, inputs, warmups=settings.warmups, samples=settings.samples)
                    case.eager_ns = list(case.samples_ns)
                del inputs
            except Exception as exc:
                case.error = f"{type(exc).__name__}: {exc}"
                log(traceback.format_exc())
            rec.seconds += time.time() - t0
            status = "ok" if case.check is not None and case.check.passed else "INCORRECT"
            if case.error:
                status = "FAILED"
            med = case.median_ns
            log(
                f"case {index:2d} B={b} S={s} T={b * s} {impl.name:>14}: {status}"
                + (f" median {med / 1000:.2f} us" if med is not None else "")
                + (f" eager {case.eager_median_ns / 1000:.2f} us" if case.eager_ns else "")
                + (f" SOL {sol / 1000:.2f} us" if sol else "")
                + (f" [{case.check.failure()}]" if case.check is not None and not case.check.passed else "")
                + (f" [{case.error}]" if case.error else "")
            )
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    return records, product
