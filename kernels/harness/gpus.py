"""Peak rates used for the speed-of-light bound: SOL = max(FLOPs / peak, bytes / bandwidth).

Datasheet numbers (dense bf16 tensor-core rate, DRAM bandwidth)."""

from __future__ import annotations

GPU_PEAKS: dict[str, dict[str, float]] = {
    "NVIDIA H200": {"bf16_flops": 989.4e12, "dram_bytes_per_s": 4.8e12},
    "NVIDIA H100 80GB HBM3": {"bf16_flops": 989.4e12, "dram_bytes_per_s": 3.35e12},
    "NVIDIA B200": {"bf16_flops": 2250e12, "dram_bytes_per_s": 8.0e12},
}


def peaks_for(product: str) -> dict[str, float] | None:
    return GPU_PEAKS.get(product)


def sol_ns(flops: int, nbytes: int, product: str) -> int | None:
    peaks = peaks_for(product)
    if peaks is None:
        return None
    seconds = max(flops / peaks["bf16_flops"], nbytes / peaks["dram_bytes_per_s"])
    return max(1, round(seconds * 1e9))


def sol_score(kernel_ns: float, sol: float, baseline_ns: float) -> float | None:
    """S = 1 / (1 + (T_k − T_SOL) / (T_b − T_SOL)); 0.5 at the baseline, 1 at SOL."""
    if baseline_ns <= sol:
        return None
    return 1.0 / (1.0 + (kernel_ns - sol) / (baseline_ns - sol))
