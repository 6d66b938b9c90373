"""Ties from samples (GPU MODE per-shape boards): 95% confidence intervals of the geometric mean
of per-case means, from each case's mean, std and runs; flat boards tie only on equal scores."""

from __future__ import annotations

import math

import pytest

from registry.manifests import BenchmarkProtocolSpec, BenchmarkRunSpec
from registry.ranking import Entry, RankRule, geomean_ci_half_width, rank_entries, rank_rule_for, rank_value

DIGEST = "sha256:" + "4" * 64


def gpumode_protocol(statistic: str) -> BenchmarkProtocolSpec:
    return BenchmarkProtocolSpec.model_validate(
        {
            "harness": {"name": "GPU MODE KernelBot", "version": "leaderboard"},
            "correctness": {"reference": "board reference", "comparator": "kernelbot_check"},
            "measurement": {"timer": "harness_reported", "primaryStatistic": statistic},
            "comparability": {"family": "gpumode_kernelbot", "version": "per-shape" if statistic == "geomean" else "flat"},
        }
    )


def run_with_cases(stats: list[tuple[int, int, int | None]]) -> BenchmarkRunSpec:
    """Cases of (mean ns, std ns, runs); the run's geomean from the means."""
    geomean = round(math.exp(sum(math.log(m) for m, _, _ in stats) / len(stats)))
    cases = []
    for index, (mean, std, runs) in enumerate(stats):
        case = {"index": index, "axes": {"n": index + 1}, "status": "passed", "latencyNs": {"mean": mean, "std": std}}
        if runs is not None:
            case["sampleCount"] = runs
        cases.append(case)
    return BenchmarkRunSpec.model_validate(
        {
            "status": "passed",
            "timing": {"primaryStatistic": "geomean", "latencyNs": {"geomean": geomean}},
            "observedAt": "2026-11-30T00:00:00Z",
            "protocolDigest": DIGEST,
            "workloadDigest": DIGEST,
            "environmentDigest": DIGEST,
            "implementationDigest": DIGEST,
            "cases": cases,
        }
    )


def test_per_shape_boards_tie_when_confidence_intervals_overlap():
    rule = rank_rule_for(gpumode_protocol("geomean"))
    assert rule == RankRule(metric="geomean", order="asc", noise_aware=True, ci_overlap=True)
    assert rule.tie_test == "ci95_overlap"
    # Two cases of 1000 ns and 4000 ns, 10 % std over 100 runs: SE(ln m_i) = 0.01, SE(ln G) = √2·0.01/2.
    spec = run_with_cases([(1000, 100, 100), (4000, 400, 100)])
    value, half = rank_value(rule, spec)
    se_log = math.sqrt(2) * 0.01 / 2
    assert value == 2000.0
    assert half == pytest.approx(2000 * math.sinh(1.959963984540054 * se_log))  # ≈ 27.7 ns
    # 2000 ± 27.7 overlaps 2050 ± 28.4 (gap 50 ≤ 56.1) but not 2080 ± 28.8 (gap 80 > 56.5).
    other = {v: v * math.sinh(1.959963984540054 * se_log) for v in (2050.0, 2080.0)}
    ranks = rank_entries(rule, [Entry("a", 2000.0, half), Entry("b", 2050.0, other[2050.0]), Entry("c", 2080.0, other[2080.0])])
    assert ranks == {"a": 1, "b": 1, "c": 3}


def test_a_noisier_run_ties_more_and_no_samples_means_exact_ties_only():
    rule = rank_rule_for(gpumode_protocol("geomean"))
    quiet = rank_value(rule, run_with_cases([(1000, 10, 100)]))[1]
    noisy = rank_value(rule, run_with_cases([(1000, 100, 100)]))[1]
    few_runs = rank_value(rule, run_with_cases([(1000, 100, 4)]))[1]
    assert 0 < quiet < noisy < few_runs
    assert geomean_ci_half_width(run_with_cases([(1000, 100, None)]), 1000.0) == 0.0  # no runs count: no interval
    ranks = rank_entries(rule, [Entry("x", 1000.0, 0.0), Entry("y", 1001.0, 0.0), Entry("z", 1000.0, 0.0)])
    assert ranks == {"x": 1, "z": 1, "y": 3}


def test_flat_boards_rank_by_score_with_exact_ties():
    rule = rank_rule_for(gpumode_protocol("score"))
    assert rule == RankRule(metric="score", order="asc", noise_aware=False)
    assert rule.tie_test == "exact"
    ranks = rank_entries(rule, [Entry("a", 5.0, 1.0), Entry("b", 5.5, 1.0), Entry("c", 5.0)])
    assert ranks == {"a": 1, "c": 1, "b": 3}


def with_timing(run: BenchmarkRunSpec, statistic: str, value: int) -> BenchmarkRunSpec:
    return run.model_copy(update={"timing": run.timing.model_copy(update={"primaryStatistic": statistic, "latencyNs": {statistic: value}})})


def test_boards_ranked_by_the_mean_or_the_last_case_tie_on_that_statistics_interval():
    # KernelBot's other rules (consts.RankCriterion): the mean of the case means, or the last case's.
    mean_rule = rank_rule_for(gpumode_protocol("mean"))
    assert mean_rule == RankRule(metric="mean", order="asc", noise_aware=True, ci_overlap=True)
    spec = with_timing(run_with_cases([(1000, 100, 100), (4000, 400, 100)]), "mean", 2500)
    value, half = rank_value(mean_rule, spec)
    # SE(M) = √(100²/100 + 400²/100) / 2 = √1700 / 2 ns.
    assert (value, half) == (2500.0, pytest.approx(1.959963984540054 * math.sqrt(1700) / 2))
    last_rule = rank_rule_for(gpumode_protocol("last"))
    single = with_timing(run_with_cases([(4000, 400, 100)]), "last", 4000)
    assert rank_value(last_rule, single) == (4000.0, pytest.approx(1.959963984540054 * 40))
    # No std or runs for a case: no interval, an exact value only.
    assert rank_value(mean_rule, with_timing(run_with_cases([(1000, 100, None), (4000, 400, 100)]), "mean", 2500)) == (2500.0, 0.0)
