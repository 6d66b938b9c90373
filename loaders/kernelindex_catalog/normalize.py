"""Check every row and assemble what will be written.

Refused as a whole (nothing is written), one problem a line: a row without the fields its table
must have, a digest that is not the digest of the manifest beside it (RFC 8785, registry/digest.py),
a run whose protocol, environment, workload or implementation digest is not the digest of the
object it names, a run whose comparison, protocol, environment or correctness key is not the one
registry/comparison.py makes for it, a workload or implementation whose operation digest is not its operation's.

Refused row by row (counted and reported with the reason; the rest is imported): a manifest the
v1alpha1 models refuse (registry/format.py), a row that names a row the export does not hold or
that was refused itself (a run whose workload was refused, a measurement of a refused run), and a
second row under an id already seen with other content.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loaders.kernelindex_catalog import SERVING_TABLES, TABLES
from loaders.kernelindex_catalog.fetch import CatalogRefused
from loaders.kernelindex_catalog.parse import Line, Parsed, capped
from registry.comparison import cohort_of
from registry.digest_check import identity, matches_digest

try:  # the v1alpha1 models (engineer A's registry/format.py)
    from registry.format import parse_format_manifest
except ImportError:  # pragma: no cover — before they land
    parse_format_manifest = None

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")

# table → (its row's digest field, the manifest kinds it may hold)
DIGESTED = {
    "operations": ("semanticDigest", ("OperationSpec",)),
    "workloads": ("workloadDigest", ("WorkloadCase", "WorkloadSuite")),
    "implementations": ("implementationDigest", ("ImplementationRevision",)),
    "model_revisions": ("modelDigest", ("ModelRevision",)),
    "serving_stack_revisions": ("stackDigest", ("ServingStackRevision",)),
    "serving_configurations": ("configurationDigest", ("ServingConfiguration",)),
    "serving_workloads": ("workloadDigest", ("ServingWorkload",)),
    "serving_runs": ("runDigest", ("ServingRun",)),
}
RUN_PARTS = {"run": "BenchmarkRun", "protocol": "BenchmarkProtocol", "environment": "ExecutionEnvironment"}
RUN_KEYS = ("comparisonKey", "protocolKey", "environmentKey", "correctnessKey")
# table → the fields of its rows that name another table's row
REFERENCES: dict[str, tuple[tuple[str, str, bool], ...]] = {
    # (field, table, required)
    "operation_aliases": (("operationId", "operations", True),),
    "workloads": (("operationId", "operations", True),),
    "implementations": (("operationId", "operations", True), ("projectId", "projects", False)),
    "benchmark_runs": (
        ("workloadId", "workloads", True),
        ("implementationId", "implementations", True),
        ("sourceId", "sources", True),
    ),
    "measurements": (("runId", "benchmark_runs", True),),
    "record_events": (("runId", "benchmark_runs", True), ("previousRunId", "benchmark_runs", False)),
    "serving_stack_revisions": (("projectId", "projects", False),),
    "serving_configurations": (("stackRevisionId", "serving_stack_revisions", True),),
    "serving_runs": (
        ("modelRevisionId", "model_revisions", True),
        ("configurationId", "serving_configurations", True),
        ("workloadId", "serving_workloads", True),
        ("sourceId", "sources", True),
    ),
    "serving_measurements": (("runId", "serving_runs", True),),
}
# Rows of these tables are checked in the export's own order (registry/catalog_format.py), in which
# every table comes after the tables it references.
ORDER = TABLES


@dataclass(frozen=True)
class Refusal:
    table: str
    subject: str  # "benchmark_runs line 812 (sol-execbench 36485)"
    reason: str


@dataclass
class Catalog:
    """The export's rows that passed, by table and id (rows without an id by position)."""

    rows: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    read: Counter = field(default_factory=Counter)  # rows per table in the file
    refused: list[Refusal] = field(default_factory=list)

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return self.rows.setdefault(name, {})

    def refused_by_table(self) -> Counter:
        return Counter(r.table for r in self.refused)


def _row_id(line: Line) -> str:
    row = line.row
    if isinstance(row.get("id"), str):
        return row["id"]
    if line.table == "operation_aliases":
        return f"{row.get('operationId')}:{row.get('alias')}"
    return f"line {line.number}"


def _label(line: Line) -> str:
    row = line.row
    if line.table == "benchmark_runs":
        native = (((row.get("manifest") or {}).get("run") or {}).get("spec") or {}).get("sourceNative") or {}
        if native.get("source") and native.get("externalId"):
            return f"{line.table} line {line.number} ({native['source']} {native['externalId']})"
    name = row.get("slug") or row.get("name")
    return f"{line.table} line {line.number}" + (f" ({name})" if isinstance(name, str) else "")


def _validate(manifest: Any) -> str | None:
    """Why the v1alpha1 models refuse `manifest`, or None."""
    if parse_format_manifest is None:
        return None
    try:
        parse_format_manifest(manifest)
    except ValueError as error:  # FormatError is a ManifestError (a ValueError) with the field paths
        problems = getattr(error, "problems", None)
        if problems:
            return "; ".join(f"{path or 'manifest'}: {reason}" for path, reason in problems[:3]) + (
                f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            )
        return str(error)
    return None


class _Checker:
    def __init__(self, file_name: str):
        self.file_name = file_name
        self.errors: list[str] = []
        self.catalog = Catalog()

    def error(self, line: Line, message: str) -> None:
        self.errors.append(f"{self.file_name}: line {line.number} ({line.table}): {message}")

    def refuse(self, line: Line, reason: str) -> None:
        self.catalog.refused.append(Refusal(line.table, _label(line), reason))

    def manifest_digest(self, line: Line, manifest: Any, expected: Any, where: str, kinds: tuple[str, ...]) -> bool:
        if not isinstance(manifest, dict):
            self.error(line, f"{where}: must be a manifest object")
            return False
        if manifest.get("kind") not in kinds:
            self.error(line, f"{where}.kind: {manifest.get('kind')!r}, expected {' or '.join(kinds)}")
            return False
        if not isinstance(expected, str) or not DIGEST.match(expected):
            self.error(line, f"{where}: its digest field is not a sha256 digest: {expected!r}")
            return False
        if not matches_digest(identity(manifest), expected):
            self.error(line, f"{where}: digest mismatch: the manifest's digest is not {expected}")
            return False
        return True

    def check(self, line: Line) -> bool:
        """Integrity (errors) first, then whether this row can be taken (refusals)."""
        table, row = line.table, line.row
        ok = True
        if table in DIGESTED:
            digest_field, kinds = DIGESTED[table]
            ok = self.manifest_digest(line, row.get("manifest"), row.get(digest_field), "manifest", kinds)
        elif table == "benchmark_runs":
            manifests = row.get("manifest")
            if not isinstance(manifests, dict) or set(RUN_PARTS) - set(manifests):
                self.error(line, "manifest: must hold the run, protocol and environment manifests")
                return False
            run = manifests["run"]
            ok = self.manifest_digest(line, run, row.get("runDigest"), "manifest.run", ("BenchmarkRun",))
            if not ok:
                return False
            spec = run.get("spec") or {}
            for part in ("protocol", "environment"):
                ok &= self.manifest_digest(line, manifests[part], spec.get(f"{part}Digest"), f"manifest.{part}", (RUN_PARTS[part],))
            for key in RUN_KEYS:
                if not isinstance(row.get(key), str) or not DIGEST.match(row[key]):
                    self.error(line, f"{key}: must be a sha256 digest")
                    ok = False
        elif table == "projects":
            manifest = row.get("manifest")
            if not isinstance(manifest, dict) or manifest.get("kind") != "SoftwareProject":
                self.error(line, "manifest: must be a SoftwareProject manifest")
                ok = False
        if not ok:
            return False
        if table in ("sources", "projects", "operations", "workloads", "implementations", "benchmark_runs") and not isinstance(
            row.get("id"), str
        ):
            self.error(line, "id: must be a string")
            return False
        return self.references(line)

    def references(self, line: Line) -> bool:
        table, row = line.table, line.row
        for field_name, target, required in REFERENCES.get(table, ()):
            value = row.get(field_name)
            if value is None and not required:
                continue
            if value not in self.catalog.table(target):
                what = "was refused" if value in self.refused_ids.get(target, set()) else "is not in the export"
                self.refuse(line, f"{field_name} {value!r}: that {target} row {what}")
                return False
        if table == "workloads":
            operation = self.catalog.table("operations")[row["operationId"]]
            if row["manifest"].get("spec", {}).get("operationSpecDigest") != operation["semanticDigest"]:
                self.error(line, "manifest.spec.operationSpecDigest: is not the digest of its operation (operationId)")
                return False
        elif table == "implementations":
            operation = self.catalog.table("operations")[row["operationId"]]
            if ((row["manifest"].get("spec") or {}).get("operation") or {}).get("specDigest") != operation["semanticDigest"]:
                self.error(line, "manifest.spec.operation.specDigest: is not the digest of its operation (operationId)")
                return False
        elif table == "benchmark_runs":
            spec = row["manifest"]["run"]["spec"]
            workload = self.catalog.table("workloads")[row["workloadId"]]
            implementation = self.catalog.table("implementations")[row["implementationId"]]
            if spec.get("workloadDigest") != workload["workloadDigest"]:
                self.error(line, "manifest.run.spec.workloadDigest: is not the digest of its workload (workloadId)")
                return False
            if spec.get("implementationDigest") != implementation["implementationDigest"]:
                self.error(line, "manifest.run.spec.implementationDigest: is not the digest of its implementation (implementationId)")
                return False
            # The cohort keys, made again as the seed system makes them (registry/comparison.py).
            try:
                cohort = cohort_of(run_spec=spec, workload_spec=workload["manifest"]["spec"])
            except (KeyError, TypeError) as error:
                self.error(line, f"cannot make its cohort keys: {error!r} missing")
                return False
            for key in RUN_KEYS:
                if row[key] != getattr(cohort, key):
                    self.error(line, f"{key}: {row[key]} is not the key of its run ({getattr(cohort, key)})")
                    return False
        elif table == "record_events":
            run = self.catalog.table("benchmark_runs")[row["runId"]]
            if row.get("comparisonKey") != run["comparisonKey"]:
                self.error(line, "comparisonKey: is not its run's comparisonKey")
                return False
        return True

    refused_ids: dict[str, set[str]]

    def run(self, lines: list[Line], problems: list[str]) -> Catalog:
        self.refused_ids = {}
        self.validated: dict[str, str | None] = {}  # digest → why the models refuse it (None: valid)
        self.errors = list(problems)
        by_table: dict[str, list[Line]] = {}
        for line in lines:
            by_table.setdefault(line.table, []).append(line)
            self.catalog.read[line.table] += 1
        for table in ORDER:
            rows = self.catalog.table(table)
            for line in by_table.get(table, ()):
                key = _row_id(line)
                if not self.check(line):
                    self.refused_ids.setdefault(table, set()).add(key)
                    continue
                reason = self.model_refusal(line)
                if reason is not None:
                    self.refuse(line, reason)
                    self.refused_ids.setdefault(table, set()).add(key)
                    continue
                if key in rows:
                    if rows[key] != line.row:
                        self.refuse(line, f"id {key}: a second row with other content (the first, kept, is earlier in the file)")
                    continue
                rows[key] = line.row
        if self.errors:
            raise CatalogRefused(capped(self.errors))
        return self.catalog

    def model_refusal(self, line: Line) -> str | None:
        row = line.row
        if line.table == "benchmark_runs":
            spec = row["manifest"]["run"]["spec"]
            digests = {"run": row["runDigest"], "protocol": spec["protocolDigest"], "environment": spec["environmentDigest"]}
            for part in RUN_PARTS:
                # Runs share a few protocols and environments: each digest is validated once.
                if digests[part] not in self.validated:
                    self.validated[digests[part]] = _validate(row["manifest"][part])
                reason = self.validated[digests[part]]
                if reason is not None:
                    return f"manifest.{part}: {reason}"
            return None
        if line.table in DIGESTED or line.table == "projects":
            return _validate(row["manifest"])
        return None


def normalize(file_name: str, parsed: Parsed) -> Catalog:
    """Raise CatalogRefused (every integrity problem, parse.py's too, one a line) or return what passed."""
    return _Checker(file_name).run(parsed.lines, parsed.problems)


def is_serving(table: str) -> bool:
    return table in SERVING_TABLES
