"""Check registry/format.py and registry/comparison.py against a KernelIndex catalog export:
every manifest in it validates as v1alpha1 and its digest, computed by us, equals the one the
export records; every run's cohort keys (comparison, protocol, environment, correctness) and
primary measurement, computed by us, equal the row's.

    .venv/bin/python bench/verify_format.py data/kernelindex-catalog/catalog-2026-08-16-0022af0b.jsonl.zst

Prints one line per table (manifests checked, refused, digest mismatches) and the first few
problems; exits 1 when any manifest is refused or any digest differs.
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
from registry.format import FormatError, format_digest, parse_format_manifest

# table -> (digest column, manifest key inside `manifest` or None when `manifest` is the manifest)
TABLES = {
    "projects": (None, None),
    "operations": ("semanticDigest", None),
    "workloads": ("workloadDigest", None),
    "implementations": ("implementationDigest", None),
    "model_revisions": ("modelDigest", None),
    "serving_stack_revisions": ("stackDigest", None),
    "serving_configurations": ("configurationDigest", None),
    "serving_workloads": ("workloadDigest", None),
    "serving_runs": ("runDigest", None),
}


def rows(path: Path):
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        for line in io.TextIOWrapper(reader, encoding="utf-8"):
            yield json.loads(line)


def main(path: str) -> int:
    checked, refused, mismatched = Counter(), Counter(), Counter()
    problems: list[str] = []
    started = time.perf_counter()

    def check(table: str, manifest: dict, expected: str | None) -> None:
        checked[table] += 1
        try:
            parsed = parse_format_manifest(manifest)
        except FormatError as error:
            refused[table] += 1
            problems.append(f"{table} {manifest.get('metadata', {}).get('name')}: {error}")
            return
        if expected is not None and format_digest(parsed) != expected:
            mismatched[table] += 1
            problems.append(f"{table} {manifest['metadata']['name']}: digest {format_digest(parsed)} != {expected}")

    workloads: dict[str, dict] = {}
    runs: list[dict] = []
    for item in rows(Path(path)):
        table, row = item["table"], item["row"]
        if table in TABLES:
            column, _ = TABLES[table]
            check(table, row["manifest"], row.get(column) if column else None)
            if table == "workloads":
                workloads[row["workloadDigest"]] = row["manifest"]["spec"]
        elif table == "benchmark_runs":
            bundle = row["manifest"]
            check("benchmark_runs", bundle["run"], row["runDigest"])
            check("benchmark_runs.protocol", bundle["protocol"], bundle["run"]["spec"]["protocolDigest"])
            check("benchmark_runs.environment", bundle["environment"], bundle["run"]["spec"]["environmentDigest"])
            runs.append(row)

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
    print(f"{'table':<32}{'checked':>10}{'refused':>10}{'mismatch':>10}")
    for table in checked:
        print(f"{table:<32}{checked[table]:>10}{refused[table]:>10}{mismatched[table]:>10}")
    print(f"{sum(checked.values())} manifests in {elapsed:.1f} s")
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
