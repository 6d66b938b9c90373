"""Check registry/format.py and registry/comparison.py against a KernelIndex catalog export:
every manifest in it validates as v1alpha1 and its digest, computed by us, equals the one the
export records; every run's cohort keys (comparison, protocol, environment, correctness) and
primary measurement, computed by us, equal the row's.

    .venv/bin/python bench/verify_format.py data/kernelindex-catalog/catalog-2026-08-16-0022af0b.jsonl.zst

Prints one line per kind (manifests in the export, distinct objects, loaded, refused: a refused
manifest fails validation or its digest is not the export's), the keys' mismatches and the first
few problems; exits 1 when any manifest is refused or any digest or key differs.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections import Counter
from pathlib import Path

import zstandard

from registry.comparison import cohort_of, primary_measurement
from registry.format import parse_format_manifest
from registry.format_conformance import Conformance


def rows(path: Path):
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        for line in io.TextIOWrapper(reader, encoding="utf-8"):
            yield json.loads(line)


def main(path: str) -> int:
    problems: list[str] = []
    started = time.perf_counter()
    conformance = Conformance()
    workloads: dict[str, dict] = {}
    runs: list[dict] = []
    for item in rows(Path(path)):
        table, row = item["table"], item["row"]
        conformance.check_rows([item])
        if table == "workloads":
            workloads[row["workloadDigest"]] = row["manifest"]["spec"]
        elif table == "benchmark_runs":
            runs.append(row)
    problems += conformance.refusals()

    keys = ("comparisonKey", "protocolKey", "environmentKey", "correctnessKey")
    key_mismatch: Counter = Counter()
    cohorts: set[str] = set()
    for row in runs:
        spec = parse_format_manifest(row["manifest"]["run"]).spec.to_json()  # durations normalized
        cohort = cohort_of(run_spec=spec, workload_spec=workloads[spec["workloadDigest"]])
        ours = {"comparisonKey": cohort.comparisonKey, "protocolKey": cohort.protocolKey}
        ours |= {"environmentKey": cohort.environmentKey, "correctnessKey": cohort.correctnessKey}
        primary = primary_measurement(spec)
        ours |= {"primaryMetric": primary.metric if primary else "none", "primaryValue": primary.value if primary else None}
        ours |= {"primaryStatistic": primary.statistic if primary else None, "primaryUnit": primary.unit if primary else None}
        for key, value in ours.items():
            if row[key] != value:
                key_mismatch[key] += 1
                problems.append(f"run {row['runDigest']}: {key} {value} != {row[key]}")
        cohorts.add(row["comparisonKey"])
    elapsed = time.perf_counter() - started
    # By kind: every manifest of the export (a run row holds its run, protocol and environment),
    # the distinct objects, how many load (valid v1alpha1, the export's digest) and are refused.
    print("\n".join(conformance.table()))
    print(f"{sum(c.manifests for c in conformance.kinds.values())} manifests in {elapsed:.1f} s")
    print(
        f"{len(runs)} runs in {len(cohorts)} cohorts; keys recomputed, mismatches: "
        + ", ".join(f"{k} {key_mismatch[k]}" for k in (*keys, "primaryMetric", "primaryValue", "primaryStatistic", "primaryUnit"))
    )
    for problem in problems[:20]:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export", help="a catalog-*.jsonl.zst export")
    sys.exit(main(parser.parse_args().export))
