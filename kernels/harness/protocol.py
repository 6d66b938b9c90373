"""The BenchmarkProtocol manifest of the harness: "kernelindex-controlled" v1.

The CUDA protocol and the CPU protocol (CI's smoke mode) are different protocols, with different
timers and comparability families, so they have different digests; so do different settings
(rounds, warm-ups, samples)."""

from __future__ import annotations

from dataclasses import dataclass

from kernels.harness import timing
from kernels.harness.correctness import COMPARATOR, Tolerance
from registry.manifests import Manifest, make_manifest

HARNESS_NAME = "kernelindex-controlled"
HARNESS_VERSION = "v1"
FAMILY = "kernelindex_controlled"
CPU_FAMILY = "kernelindex_controlled_cpu"


@dataclass(frozen=True)
class Settings:
    device: str = "cuda"
    rounds: int = 5
    warmups: int = 10
    samples: int = 50
    seed: int = 0
    tolerance: Tolerance = Tolerance()


def protocol_spec(settings: Settings) -> dict:
    tol = settings.tolerance
    correctness = {
        "reference": "kernels.ops.qkv_qknorm_backward.reference:reference_fp32",
        "comparator": COMPARATOR,
        "rounds": settings.rounds,
        "atol": tol.atol,
        "rtol": tol.rtol,
        "minMatchedRatio": tol.min_matched_ratio,
        "policy": (
            "Fresh seeded random inputs every round (norm weights random, rstd and x̂ independent "
            "random tensors); outputs NaN-poisoned before each run (destination-passing variant, "
            "or the caching allocator's blocks for implementations that allocate); every output "
            "compared in fp32 against the oracle (G rounded to bf16 as defined, GEMMs in fp32): "
            "an element passes if |out − ref| ≤ atol·max(1, RMS(ref)) + rtol·|ref| (the absolute "
            "term scaled per output), an output if ≥ minMatchedRatio "
            "of its elements pass; any NaN/Inf, an all-zero output, a wrong shape or dtype, or an "
            "exception fails the case."
        ),
    }
    if settings.device == "cuda":
        measurement = {
            "timer": timing.GRAPH_TIMER,
            "primaryStatistic": "median",
            "warmups": settings.warmups,
            "samples": settings.samples,
            "l2Flush": True,
            "notes": (
                "Per case: one call captured in a CUDA graph; each sample is one graph replay "
                "between CUDA events, after zero-filling a buffer of max(2×L2, 256 MiB) outside the "
                "events; warm-up replays first; the case statistic is the median of the samples. "
                "The run's latencyNs.median (= geomean) is the geometric mean over cases of the "
                "per-case medians. Eager call latency (events around a direct call, L2 flushed) is "
                "recorded per case too. SOL per case = max(FLOPs / peak bf16, minimum bytes / DRAM "
                "bandwidth) from the GPU's datasheet; S = 1/(1 + (T_k − T_SOL)/(T_b − T_SOL)) with "
                "T_b the eager PyTorch reference's median under this same timer. Clocks are not "
                "locked."
            ),
        }
        comparability = {
            "family": FAMILY,
            "version": HARNESS_VERSION,
            "notes": "Device time from CUDA-graph replay, L2 flushed, median; comparable only among "
            "runs of this family and version on the same GPU product.",
        }
    else:
        measurement = {
            "timer": timing.CPU_TIMER,
            "primaryStatistic": "median",
            "warmups": settings.warmups,
            "samples": settings.samples,
            "l2Flush": False,
            "notes": (
                "CPU smoke mode (what CI runs): host wall clock (time.perf_counter_ns) around each "
                "call, one torch thread, no cache flush, tiny shapes. Not comparable with device-time protocols."
            ),
        }
        comparability = {
            "family": CPU_FAMILY,
            "version": HARNESS_VERSION,
            "notes": "CPU wall clock; a smoke test of the harness, not a benchmark.",
        }
    return {
        "harness": {"name": HARNESS_NAME, "version": HARNESS_VERSION},
        "correctness": correctness,
        "measurement": measurement,
        "comparability": comparability,
    }


def protocol_manifest(settings: Settings) -> Manifest:
    name = f"{HARNESS_NAME}-{HARNESS_VERSION}-{settings.device}"
    return make_manifest(
        "BenchmarkProtocol", name, protocol_spec(settings), title=f"KernelIndex controlled harness {HARNESS_VERSION} ({settings.device})"
    )
