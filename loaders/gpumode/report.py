"""What a GPU MODE import did (or, with --dry-run, would do): per board and GPU, and the shared
summary (`loaders.common.report`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from loaders.common.report import ImportReport as CommonReport
from loaders.common.report import Problem, print_problems, summary_table


@dataclass
class BoardPlan:
    name: str
    kind: str = ""  # per-shape / flat
    rule: str = ""  # the board's score rule: geomean / mean / last (per-shape), score (flat)
    listed: bool = True
    rows: int = 0  # rows of this board read
    runs: Counter = field(default_factory=Counter)  # environment → runs (one per user)


@dataclass
class ImportReport(CommonReport):
    configs_listed: int = 0
    configs_read: int = 0
    boards_listed: int = 0
    candidates: int = 0  # passing leaderboard submissions
    not_best: int = 0  # candidates beaten by the same user's better submission on that board and GPU
    configs_by_filter: list[str] = field(default_factory=list)  # read through /filter: /rows refused them
    index_waits: list[str] = field(default_factory=list)  # each wait for a /filter index, as printed
    boards: dict[str, BoardPlan] = field(default_factory=dict)
    notices: list[Problem] = field(default_factory=list)  # worth saying, nothing lost (exit 0)

    def board(self, name: str) -> BoardPlan:
        return self.boards.setdefault(name, BoardPlan(name))

    def notice(self, subject: str, what: str) -> None:
        self.notices.append(Problem(subject, what))

    def skip_reasons(self) -> Counter:
        """How many rows were skipped for each reason (the reason without the row's own values)."""
        return Counter(problem.reason.split(":")[0] for problem in self.skipped)


def print_report(report: ImportReport, console: Console, *, max_problems: int = 50) -> None:
    mode = "DRY RUN — nothing was written" if report.dry_run else "import"
    console.print(f"[bold]GPU MODE KernelBot {mode}[/bold] from {report.source}")
    boards = Table(title="Boards (one run per user and environment)")
    for column in ("board", "kind", "score rule", "rows", "environment", "runs"):
        boards.add_column(column, justify="right" if column in ("rows", "runs") else "left")
    for plan in sorted(report.boards.values(), key=lambda p: p.name):
        name = plan.name + ("" if plan.listed else " (unlisted)")
        gpus = sorted(plan.runs.items()) or [("—", 0)]
        for position, (gpu, runs) in enumerate(gpus):
            first = position == 0
            cells = (name, plan.kind, plan.rule, str(plan.rows)) if first else ("", "", "", "")
            boards.add_row(*cells, gpu, str(runs))
    console.print(boards)
    rows = [
        ("configs listed / read", f"{report.configs_listed} / {report.configs_read}"),
        ("configs read through /filter", ", ".join(report.configs_by_filter) or "none"),
        ("boards listed / with rows", f"{report.boards_listed} / {len(report.boards)}"),
        ("passing leaderboard submissions", str(report.candidates)),
        ("beaten by the same user's better one", str(report.not_best)),
    ]
    rows += [(f"skipped: {reason}", str(count)) for reason, count in sorted(report.skip_reasons().items())]
    console.print(summary_table(report, rows, records="rows"))
    print_problems(report, console, max_problems=max_problems)
    for notice in report.notices:
        console.print(f"note: {notice.subject}: {notice.reason}", markup=False, highlight=False, soft_wrap=True)
    if report.rejected:
        first = report.rejected[0]
        more = f" (and {len(report.rejected) - 1} more above)" if len(report.rejected) > 1 else ""
        console.print(f"error: {first.subject}: {first.reason}{more}", markup=False, highlight=False, soft_wrap=True)
