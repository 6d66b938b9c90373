"""Timers.

cuda_graph_replay_events: one call of the implementation is captured in a CUDA graph; each sample
  is one replay between two CUDA events recorded on the stream, with the L2 flushed (a buffer of
  at least twice the L2 size zero-filled) just before the start event. Device time, including the
  graph's launch on the device; the flush is outside the events.
cuda_eager_events: the same, calling the implementation directly (host dispatch included where
  the GPU waits for it).
wall_clock_perf_counter: CPU mode; time.perf_counter_ns around each call.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

GRAPH_TIMER = "cuda_graph_replay_events"
CPU_TIMER = "wall_clock_perf_counter"


def stats(samples_ns: list[int]) -> dict[str, int]:
    if not samples_ns:
        return {}
    s = sorted(samples_ns)
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3
    return {
        "median": round(statistics.median(s)),
        "p25": round(q[0]),
        "p75": round(q[2]),
        "min": s[0],
        "max": s[-1],
        "mean": round(statistics.fmean(s)),
    }


class L2Flush:
    """Zero-fills a buffer of max(2 × L2, 256 MiB) on the current stream."""

    def __init__(self, device: str = "cuda"):
        import torch

        props = torch.cuda.get_device_properties(torch.device(device))
        l2 = int(getattr(props, "L2_cache_size", 50 * 2**20))
        self.nbytes = max(2 * l2, 256 * 2**20)
        self.buffer = torch.empty(self.nbytes // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


def _warm(fn: Callable[..., Any], inputs: dict[str, Any], calls: int = 3) -> None:
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(calls):
            fn(**inputs)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def time_graph(fn: Callable[..., Any], inputs: dict[str, Any], *, warmups: int, samples: int, flush: L2Flush) -> list[int]:
    import torch

    _warm(fn, inputs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        keep = fn(**inputs)
    for _ in range(warmups):
        flush()
        graph.replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for i in range(samples):
        flush()
        starts[i].record()
        graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    out = [round(s.elapsed_time(e) * 1e6) for s, e in zip(starts, ends)]
    del keep, graph
    return out


def time_eager(fn: Callable[..., Any], inputs: dict[str, Any], *, warmups: int, samples: int, flush: L2Flush) -> list[int]:
    import torch

    _warm(fn, inputs)
    for _ in range(warmups):
        flush()
        fn(**inputs)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for i in range(samples):
        flush()
        starts[i].record()
        fn(**inputs)
        ends[i].record()
    torch.cuda.synchronize()
    return [round(s.elapsed_time(e) * 1e6) for s, e in zip(starts, ends)]


def time_wall(fn: Callable[..., Any], inputs: dict[str, Any], *, warmups: int, samples: int) -> list[int]:
    for _ in range(warmups):
        fn(**inputs)
    out = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        fn(**inputs)
        out.append(time.perf_counter_ns() - t0)
    return out
