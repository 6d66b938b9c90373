"""What an `kernelindex import SOURCE` command runs around a loader's `run_import`: the report
printed, and a fatal source error (host unreachable, source index unusable) as exit code 2."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console

from loaders.common.report import ImportReport


async def run_command(
    run_import: Callable[..., Awaitable[ImportReport]],
    print_report: Callable[[ImportReport, Console], None],
    *,
    title: str,
    fatal: tuple[type[Exception], ...],
    db: Any,
    console: Console | None = None,
    **options: Any,
) -> int:
    """Exit code: 0 all imported, 1 some records rejected (each reported), 2 nothing could be
    imported (one `error`-styled line naming why)."""
    console = console or Console()
    try:
        report = await run_import(db, console=console, **options)
    except fatal as error:
        console.print(f"[bold red]{title} import failed:[/bold red] {error}")
        return 2
    print_report(report, console)
    return 1 if report.rejected else 0
