"""The report of `kernelindex import kernelindex-catalog FILE|URL` and how it is printed.

The steps are strung together by this source's loader (loader.py, a WholeSourceLoader) and run by
the import pipeline (loaders/pipeline.py `run_import`, `import_command`), the only part of an import
that holds the database: the whole export is read and checked (fetch → parse → normalize → plan)
before anything is written; an export
refused as a whole raises `CatalogRefused` (its problems are printed as `error:` lines, exit code
2) and writes nothing. Rows refused one by one are reported with their reason (exit code 1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from loaders.kernelindex_catalog import TABLES
from loaders.kernelindex_catalog.normalize import Refusal

# table of the export → the collection its rows are written to
COLLECTION_OF_TABLE = {
    "operations": "definitions",
    "workloads": "workloads",
    "implementations": "implementations",
    "projects": "projects",
    "artifacts": "artifacts",
    "model_revisions": "model_revisions",
    "serving_stack_revisions": "serving_stack_revisions",
    "serving_configurations": "serving_configurations",
    "serving_workloads": "serving_workloads",
    "serving_runs": "serving_runs",
}
# Kept inside the documents of another table rather than as documents of their own.
KEPT_WITH = {
    "sources": "every document's provenance",
    "operation_aliases": "their operation (aliases)",
    "measurements": "their run",
    "serving_measurements": "their serving run",
    "record_events": "their cohort's record history",
}


@dataclass
class CatalogReport:
    target: str
    dry_run: bool
    file_name: str = ""
    sha256: str = ""
    notes: list[str] = field(default_factory=list)
    read: Counter = field(default_factory=Counter)
    refused: list[Refusal] = field(default_factory=list)
    outcome: Any = None  # store.catalog.WriteOutcome once written
    skipped_as_imported: bool = False
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        return self.read["benchmark_runs"]


def print_report(report: CatalogReport, console: Console) -> None:
    for note in report.notes:
        console.print(f"note: {note}")
    if report.skipped_as_imported:
        console.print(f"{report.file_name} (sha256 {report.sha256}) is imported already: nothing to do")
        return
    out = report.outcome
    table = Table(title=f"{report.file_name} · sha256 {report.sha256[:16]}…")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("refused", justify="right")
    table.add_column("new" if not report.dry_run else "would check", justify="right")
    table.add_column("unchanged", justify="right")
    table.add_column("stored as")
    refused = Counter(r.table for r in report.refused)
    for name in TABLES:
        if not report.read[name]:
            continue
        new = unchanged = ""
        stored = KEPT_WITH.get(name, COLLECTION_OF_TABLE.get(name, ""))
        if name == "benchmark_runs":
            stored = "runs"
            if out:
                new, unchanged = str(out.runs_new), str(out.runs_unchanged)
        elif out and name in COLLECTION_OF_TABLE:
            collection = COLLECTION_OF_TABLE[name]
            new, unchanged = str(out.new.get(collection, 0)), str(out.unchanged.get(collection, 0))
        elif out and name == "record_events":
            new = str(out.history_new)
        table.add_row(name, f"{report.read[name]:,}", str(refused[name]), new, unchanged, stored)
    console.print(table)
    if out:
        extra = []
        for collection in ("protocols", "environments"):
            extra.append(f"{collection} {out.new.get(collection, 0)} new / {out.unchanged.get(collection, 0)} unchanged")
        extra.append(f"cohorts touched {out.groups_touched}")
        extra.append(f"provenance added to {out.provenance_added} stored documents")
        console.print(" · ".join(extra))
        console.print("write: " + ", ".join(f"{name} {seconds:.2f}" for name, seconds in out.seconds.items()))
        for source, external_id, ours, theirs in out.reconciled[:50]:
            console.print(
                f"reconciled: {source} {external_id} is already run {ours[:19]}… (another import path); the export's {theirs[:19]}… is not written"
            )
        if len(out.reconciled) > 50:
            console.print(f"… and {len(out.reconciled) - 50} more reconciled source records")
        if out.reconciled:
            console.print(f"reconciled source records: {len(out.reconciled)}")
    if report.refused:
        problems = Table(title="Refused rows", title_style="red")
        problems.add_column("row")
        problems.add_column("reason")
        for refusal in report.refused[:50]:
            problems.add_row(refusal.subject, refusal.reason)
        console.print(problems)
        if len(report.refused) > 50:
            console.print(f"… and {len(report.refused) - 50} more refused rows")
    runs_per_s = report.runs / report.seconds if report.seconds else 0
    phases = ", ".join(f"{name} {seconds:.2f}" for name, seconds in report.phase_seconds.items())
    console.print(f"{report.runs:,} runs in {report.seconds:.2f} s ({runs_per_s:,.0f} runs/s; {phases})")
