"""What an import did (or, with --dry-run, would do), and how it is printed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table


@dataclass(frozen=True)
class Problem:
    subject: str  # "kernel 51", "submission 37369", "kernel 51 submissions offset 40"
    reason: str


@dataclass
class KernelPlan:
    """Per kernel: what was found and what would be (or was) published."""

    kernel_id: int
    name: str
    discovered: int = 0
    runs: int = 0
    groups: Counter = field(default_factory=Counter)  # "B200 · v1.1" → runs


@dataclass
class ImportReport:
    source: str
    dry_run: bool
    kernels_listed: int = 0
    kernels_selected: int = 0
    kernels_imported: int = 0
    discovered: int = 0  # submission records found on the pages
    parsed: int = 0  # records that parsed and normalized into a run
    new: int = 0
    unchanged: int = 0
    superseded: int = 0
    rejected: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    snapshots_seen: int = 0
    snapshots_saved: int = 0
    plan: list[KernelPlan] = field(default_factory=list)
    seconds: float = 0.0
    phase_seconds: Counter = field(default_factory=Counter)  # "publish", "snapshots", the rest

    def reject(self, subject: str, reason: str) -> None:
        self.rejected.append(Problem(subject, reason))

    def skip(self, subject: str, reason: str) -> None:
        self.skipped.append(Problem(subject, reason))

    @property
    def published(self) -> int:
        return self.new + self.unchanged + self.superseded

    def counts(self) -> dict[str, int]:
        return {
            "kernels": self.kernels_selected,
            "discovered": self.discovered,
            "parsed": self.parsed,
            "new": self.new,
            "unchanged": self.unchanged,
            "superseded": self.superseded,
            "rejected": len(self.rejected),
            "skipped": len(self.skipped),
        }


def print_report(report: ImportReport, console: Console, *, max_problems: int = 50) -> None:
    mode = "DRY RUN — nothing was written" if report.dry_run else "import"
    console.print(f"[bold]SOL-ExecBench {mode}[/bold] from {report.source}")

    if report.dry_run:
        plan = Table(title="Plan", show_lines=False)
        for column in ("kernel", "name", "submissions", "runs", "groups (GPU · stack: runs)"):
            plan.add_column(column, justify="right" if column in ("kernel", "submissions", "runs") else "left")
        for kernel in report.plan:
            groups = ", ".join(f"{key}: {count}" for key, count in sorted(kernel.groups.items()))
            plan.add_row(str(kernel.kernel_id), kernel.name, str(kernel.discovered), str(kernel.runs), groups)
        console.print(plan)

    summary = Table(title="Summary", show_header=False)
    summary.add_column("what")
    summary.add_column("count", justify="right")
    summary.add_row("kernels listed / selected / imported", f"{report.kernels_listed} / {report.kernels_selected} / {report.kernels_imported}")
    summary.add_row("submissions discovered", str(report.discovered))
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
    console.print(summary)

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
