"""`kernelindex import SOURCE`: published results from an external source.

A new source adds one entry to SOURCES (its `-h` lists it) and its own options below."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from cli.common import fail, with_db
from server.settings import Settings

SOURCES = {
    "sol-execbench": "NVIDIA's SOL-ExecBench leaderboard (live API or a saved snapshot)",
    "gpumode": "GPU MODE's KernelBot competition results (Hugging Face datasets-server or a saved snapshot)",
}


def register(sub) -> None:
    imp = sub.add_parser(
        "import",
        help="import published results from an external source",
        description="Sources: " + "; ".join(f"{name}: {what}" for name, what in SOURCES.items()),
    )
    imp.add_argument("source", choices=list(SOURCES), metavar="SOURCE", help="one of: " + ", ".join(SOURCES))
    where = imp.add_mutually_exclusive_group()
    where.add_argument("--snapshot", type=Path, default=None, help="read saved responses from this directory")
    where.add_argument("--base-url", default=None, help="the source API's base URL")
    imp.add_argument("--kernel", type=int, action="append", default=None, help="sol-execbench: kernel id (repeatable)")
    imp.add_argument("--leaderboard", action="append", default=None, help="gpumode: board name (repeatable)")
    imp.add_argument("--limit", type=int, default=None, help="at most this many submissions per kernel (gpumode: rows per config)")
    imp.add_argument("--dry-run", action="store_true", help="write nothing; print the plan")
    imp.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Exit code: 0 all imported, 1 some records rejected (each reported), 2 nothing could be
    imported (source unreachable, kernel or config list unusable)."""
    from rich.console import Console

    if args.source == "gpumode":
        from loaders.gpumode.cli import import_command

        if args.kernel:
            return fail("--kernel: only for sol-execbench (gpumode selects boards with --leaderboard)")
        selection = {"leaderboards": args.leaderboard}
    else:
        from loaders.sol_execbench.cli import import_command

        if args.leaderboard:
            return fail("--leaderboard: only for gpumode (sol-execbench selects kernels with --kernel)")
        selection = {"kernels": args.kernel}
    console = Console(stderr=True)
    options = dict(snapshot_dir=args.snapshot, base_url=args.base_url, limit=args.limit, console=console, **selection)
    if args.dry_run:
        # A dry run reads the source only; the database is not touched.
        return asyncio.run(import_command(None, dry_run=True, **options))
    return with_db(settings, lambda db: import_command(db, dry_run=False, **options))
