"""The progress bar of an import: one step per unit (kernel, board), with the runs so far."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def import_progress(console: Console, unit: str, *, show: bool) -> Progress:
    """Add a task with `runs=0`; update it with `runs=`. Hidden when `show` is false (serve)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit + " · {task.fields[runs]} runs"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not show,
    )
