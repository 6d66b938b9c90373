"""What a GPU MODE import did (or, with --dry-run, would do): per board and GPU, and the shared
summary (`loaders.common.report`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from loaders.common.report import ImportReport as CommonReport
from loaders.common.report import print_problems, summary_table


@dataclass
class BoardPlan:
    name: str
    kind: str = ""  # per-shape / flat
    listed: bool = True
    rows: int = 0  # rows of this board read
    runs: Counter = field(default_factory=Counter)  # GPU → runs (one per user)


@dataclass
class ImportReport(CommonReport):
    configs_listed: int = 0
    configs_read: int = 0
    boards_listed: int = 0
    candidates: int = 0  # passing leaderboard submissions
    not_best: int = 0  # candidates beaten by the same user's better submission on that board and GPU
    boards: dict[str, BoardPlan] = field(default_factory=dict)

    def board(self, name: str) -> BoardPlan:
        return self.boards.setdefault(name, BoardPlan(name))


def print_report(report: ImportReport, console: Console, *, max_problems: int = 50) -> None:
    mode = "DRY RUN — nothing was written" if report.dry_run else "import"
    console.print(f"[bold]GPU MODE KernelBot {mode}[/bold] from {report.source}")
    boards = Table(title="Boards (one run per user and GPU)")
    for column in ("board", "kind", "rows", "GPU", "runs"):
        boards.add_column(column, justify="right" if column in ("rows", "runs") else "left")
    for plan in sorted(report.boards.values(), key=lambda p: p.name):
        name = plan.name + ("" if plan.listed else " (unlisted)")
        gpus = sorted(plan.runs.items()) or [("—", 0)]
        for position, (gpu, runs) in enumerate(gpus):
            first = position == 0
            boards.add_row(name if first else "", plan.kind if first else "", str(plan.rows) if first else "", gpu, str(runs))
    console.print(boards)
    rows = [
        ("configs listed / read", f"{report.configs_listed} / {report.configs_read}"),
        ("boards listed / with rows", f"{report.boards_listed} / {len(report.boards)}"),
        ("passing leaderboard submissions", str(report.candidates)),
        ("beaten by the same user's better one", str(report.not_best)),
    ]
    console.print(summary_table(report, rows, records="rows"))
    print_problems(report, console, max_problems=max_problems)
