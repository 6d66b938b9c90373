"""Ranking inside one comparison group.

Source-native groups rank by the source's own rule (SOL-ExecBench: `sol_score`, higher is
better). Controlled groups rank by the protocol's primary latency statistic, lower is better, and
call two runs tied when their difference is inside the measured noise.

GPU MODE (KernelBot) per-shape boards rank by the board's own score rule (KernelBot's
`ranking_by`: the geometric mean G, the arithmetic mean, or the last of the per-case means; the
protocol's primary statistic `geomean`, `mean` or `last`), lower is better, and declare **ties
from samples**: two runs tie when the 95% confidence intervals of their scores overlap. For the
arithmetic mean M of k cases the interval is M ± 1.96·√(Σ s_i²/n_i)/k, for the last case
m ± 1.96·s/√n; for G: The interval is a normal approximation on the log scale (delta
method): each case i has mean m_i, standard deviation s_i over n_i timed runs, so
SE(ln m_i) ≈ s_i / (m_i·√n_i) and SE(ln G) = √(Σ SE(ln m_i)²) / k over k cases; the interval is
G·exp(±1.96·SE(ln G)), whose half-width G·sinh(1.96·SE(ln G)) is the run's `noise`. Intervals
[a ± hₐ] and [b ± h_b] overlap when |a − b| ≤ hₐ + h_b. A run lacking a case's mean, std or runs
has no interval (half-width 0: it ties only on an equal value). GPU MODE's flat boards publish
one score per submission and no samples: they rank by it with exact ties only.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Literal

from registry.manifests import BenchmarkProtocolSpec, BenchmarkRunSpec, RunStatus

SOL_EXECBENCH_FAMILY = "sol_execbench_leaderboard"
GPUMODE_FAMILY = "gpumode_kernelbot"
GEOMEAN = "geomean"
MEAN_OF_CASES, LAST_CASE = "mean", "last"
GPUMODE_CASE_RULES = (GEOMEAN, MEAN_OF_CASES, LAST_CASE)
Z95 = 1.959963984540054  # two-sided 95% of the standard normal


@dataclass(frozen=True)
class RankRule:
    """How a group orders its runs: by `metric`, `order`, with `noise`-aware ties or exact ones."""

    metric: str
    order: Literal["asc", "desc"]
    noise_aware: bool
    # noise is a 95% confidence half-width and runs tie when their intervals overlap.
    ci_overlap: bool = False

    @property
    def tie_test(self) -> str:
        if self.ci_overlap:
            return "ci95_overlap"
        return "noise_band" if self.noise_aware else "exact"


@dataclass(frozen=True)
class Entry:
    run_id: str
    value: float | None  # None: not rankable (failed, disqualified, no value)
    noise: float = 0.0  # half-width within which another value counts as equal


def rank_rule_for(protocol: BenchmarkProtocolSpec) -> RankRule:
    if protocol.comparability.family == SOL_EXECBENCH_FAMILY:
        return RankRule(metric="sol_score", order="desc", noise_aware=False)
    if protocol.comparability.family == GPUMODE_FAMILY:
        statistic = protocol.measurement.primaryStatistic
        samples = statistic in GPUMODE_CASE_RULES  # per-shape boards; flat ones rank by their score alone
        return RankRule(metric=statistic, order="asc", noise_aware=samples, ci_overlap=samples)
    return RankRule(metric=protocol.measurement.primaryStatistic, order="asc", noise_aware=True)


def rank_value(rule: RankRule, run: BenchmarkRunSpec) -> tuple[float | None, float]:
    """The value a run is ranked by and its noise; (None, 0) when it must not be ranked."""
    if run.status is not RunStatus.passed:
        return None, 0.0
    if rule.metric == "sol_score":
        score = run.sourceNative.metrics.get("sol_score") if run.sourceNative else None
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return None, 0.0
        return float(score), 0.0
    value = run.timing.latencyNs.get(rule.metric)
    if value is None:
        return None, 0.0
    if rule.ci_overlap:
        if rule.metric == GEOMEAN:
            return float(value), geomean_ci_half_width(run, float(value))
        return float(value), mean_ci_half_width(run, last_only=rule.metric == LAST_CASE)
    if not rule.noise_aware:
        return float(value), 0.0
    return float(value), _noise_ns(run)


def geomean_ci_half_width(run: BenchmarkRunSpec, geomean: float) -> float:
    """Half-width of the 95% confidence interval of the geometric mean of per-case means (see
    the module docstring); 0 when a case lacks its mean, std or runs."""
    terms = []
    for case in run.cases:
        mean, std, runs = case.latencyNs.get("mean"), case.latencyNs.get("std"), case.sampleCount
        if not mean or std is None or not runs:
            return 0.0
        terms.append((std / mean) ** 2 / runs)
    if not terms:
        return 0.0
    se_log = math.sqrt(sum(terms)) / len(terms)
    return geomean * math.sinh(Z95 * se_log)


def mean_ci_half_width(run: BenchmarkRunSpec, *, last_only: bool = False) -> float:
    """Half-width of the 95% confidence interval of the arithmetic mean of per-case means (of
    the last case alone with `last_only`); 0 when a case lacks its std or runs."""
    cases = run.cases[-1:] if last_only else run.cases
    terms = []
    for case in cases:
        std, runs = case.latencyNs.get("std"), case.sampleCount
        if std is None or not runs:
            return 0.0
        terms.append(std**2 / runs)
    if not terms:
        return 0.0
    return Z95 * math.sqrt(sum(terms)) / len(terms)


def _noise_ns(run: BenchmarkRunSpec) -> float:
    """Half the interquartile range, as measured: from the run's own p25/p75 when it reports
    them, else from its per-case raw samples (mean relative half-IQR, applied to the aggregate)."""
    timing = run.timing.latencyNs
    p25, p75 = timing.get("p25"), timing.get("p75")
    if p25 is not None and p75 is not None and p75 >= p25:
        return (p75 - p25) / 2
    spreads = []
    for case in run.cases:
        if len(case.samplesNs) >= 4:
            q1, median, q3 = statistics.quantiles(case.samplesNs, n=4)
            if median > 0:
                spreads.append((q3 - q1) / 2 / median)
    if not spreads:
        return 0.0
    return timing[run.timing.primaryStatistic] * sum(spreads) / len(spreads)


def rank_entries(rule: RankRule, entries: list[Entry]) -> dict[str, int | None]:
    """Competition ranking ("1224"): equal values share a rank, the next rank skips.

    With a noise-aware rule a run ties the best run of the current rank when their values are
    within the larger of the two noise bands (with `ci_overlap`: when their confidence
    intervals overlap). Unrankable entries get None.
    """
    ranked = [e for e in entries if e.value is not None]
    ranked.sort(key=lambda e: (-e.value if rule.order == "desc" else e.value, e.run_id))
    ranks: dict[str, int | None] = {e.run_id: None for e in entries if e.value is None}
    anchor: Entry | None = None
    anchor_rank = 0
    for position, entry in enumerate(ranked, start=1):
        if anchor is not None and _tied(rule, anchor, entry):
            ranks[entry.run_id] = anchor_rank
            continue
        anchor, anchor_rank = entry, position
        ranks[entry.run_id] = position
    return ranks


def _tied(rule: RankRule, a: Entry, b: Entry) -> bool:
    if a.value == b.value:
        return True
    if not rule.noise_aware:
        return False
    if rule.ci_overlap:
        return abs(a.value - b.value) <= a.noise + b.noise
    return abs(a.value - b.value) <= max(a.noise, b.noise)


def leader(ranks: dict[str, int | None]) -> str | None:
    """The #1 run; among runs tied at 1, the first by id (stable)."""
    firsts = sorted(run_id for run_id, rank in ranks.items() if rank == 1)
    return firsts[0] if firsts else None
