"""What an import did (or, with --dry-run, would do): the counts every loader keeps, the
problems (rejected: bad input; skipped: valid but not a run), and how they are printed."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table


@dataclass(frozen=True)
class Problem:
    subject: str  # "kernel 51", "submission 37369", "amd_successful_submissions offset 100"
    reason: str


@dataclass
class ImportReport:
    source: str
    dry_run: bool
    discovered: int = 0  # source records found on the pages
    parsed: int = 0  # records that parsed and normalized into a run
    new: int = 0
    unchanged: int = 0
    superseded: int = 0
    rejected: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    snapshots_seen: int = 0
    snapshots_saved: int = 0
    seconds: float = 0.0
    phase_seconds: Counter = field(default_factory=Counter)  # "publish_many", "write snapshots", the rest

    def reject(self, subject: str, reason: str) -> None:
        self.rejected.append(Problem(subject, reason))

    def skip(self, subject: str, reason: str) -> None:
        self.skipped.append(Problem(subject, reason))

    @property
    def published(self) -> int:
        return self.new + self.unchanged + self.superseded


def summary_table(report: ImportReport, rows: list[tuple[str, str]], *, records: str) -> Table:
    """The summary every loader prints: its own `rows` first, then the shared counts."""
    summary = Table(title="Summary", show_header=False)
    summary.add_column("what")
    summary.add_column("count", justify="right")
    for what, count in rows:
        summary.add_row(what, count)
    summary.add_row(f"{records} discovered", str(report.discovered))
    summary.add_row("parsed", str(report.parsed))
    if report.dry_run:
        summary.add_row("would publish", str(report.parsed))
    else:
        summary.add_row("new", str(report.new))
        summary.add_row("unchanged", str(report.unchanged))
        summary.add_row("superseded", str(report.superseded))
    summary.add_row("rejected", str(len(report.rejected)))
    summary.add_row("skipped (not representable as a run)", str(len(report.skipped)))
    if not report.dry_run:
        summary.add_row("source snapshots new / seen", f"{report.snapshots_saved} / {report.snapshots_seen}")
    summary.add_row("seconds", f"{report.seconds:.2f}")
    if report.seconds > 0 and report.parsed:
        summary.add_row("runs per second", f"{report.parsed / report.seconds:,.0f}")
    return summary


def print_problems(report: ImportReport, console: Console, *, max_problems: int = 50) -> None:
    for title, problems, style in (("Rejected", report.rejected, "red"), ("Skipped", report.skipped, "yellow")):
        if not problems:
            continue
        table = Table(title=title, title_style=style)
        table.add_column("record")
        table.add_column("reason")
        for problem in problems[:max_problems]:
            table.add_row(problem.subject, problem.reason)
        console.print(table)
        if len(problems) > max_problems:
            console.print(f"… and {len(problems) - max_problems} more {title.lower()}")


@asynccontextmanager
async def timed_import(source: Any, report: ImportReport):
    """Close the source and record how long the import took (and the time not spent in the
    phases already counted: fetching, parsing, normalizing), however it ends."""
    started = time.perf_counter()
    try:
        yield
    finally:
        await source.aclose()
        report.seconds = time.perf_counter() - started
        report.phase_seconds["fetch, parse, normalize"] = report.seconds - sum(report.phase_seconds.values())
