"""What a SOL-ExecBench import did (or, with --dry-run, would do), and how it is printed. The
shared counts and problem lists are `loaders.common.report`'s."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from loaders.common.report import ImportReport as CommonReport
from loaders.common.report import Problem, print_problems, summary_table

__all__ = ["ImportReport", "KernelPlan", "Problem", "print_report"]


@dataclass
class KernelPlan:
    """Per kernel: what was found and what would be (or was) published."""

    kernel_id: int
    name: str
    discovered: int = 0
    runs: int = 0
    groups: Counter = field(default_factory=Counter)  # "B200 · v1.1" → runs


@dataclass
class ImportReport(CommonReport):
    kernels_listed: int = 0
    kernels_selected: int = 0
    kernels_imported: int = 0
    plan: list[KernelPlan] = field(default_factory=list)

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

    kernels = f"{report.kernels_listed} / {report.kernels_selected} / {report.kernels_imported}"
    console.print(summary_table(report, [("kernels listed / selected / imported", kernels)], records="submissions"))
    print_problems(report, console, max_problems=max_problems)
