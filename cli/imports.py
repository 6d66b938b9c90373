"""`kernelindex import SOURCE`: published results from an external source.

The sources, their descriptions and their own options come from the registry
(loaders/sources.py); a new source adds nothing here."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from cli.common import fail, with_db
from server.settings import Settings

# The KernelIndex catalog export is not a per-record source of the pipeline's registry: it is
# checked whole and written in bulk (loaders/pipeline.py run_catalog_import), so it is a verb here.
CATALOG = "kernelindex-catalog"
CATALOG_DESCRIPTION = "the KernelIndex public catalog export (catalog-*.jsonl.zst with its latest.json; a FILE or URL)"


def register(sub) -> None:
    from loaders.sources import loaders

    sources = loaders()
    imp = sub.add_parser(
        "import",
        help="import published results from an external source",
        description="Sources: " + "; ".join([*(f"{s.key}: {s.description}" for s in sources), f"{CATALOG}: {CATALOG_DESCRIPTION}"]),
    )
    keys = [s.key for s in sources] + [CATALOG]
    imp.add_argument("source", choices=keys, metavar="SOURCE", help="one of: " + ", ".join(keys))
    imp.add_argument(
        "target", nargs="?", default=None, metavar="FILE|URL", help=f"{CATALOG}: the export (or its latest.json, or their folder)"
    )
    where = imp.add_mutually_exclusive_group()
    where.add_argument("--snapshot", type=Path, default=None, help="read saved responses from this directory")
    where.add_argument("--base-url", default=None, help="the source API's base URL")
    added: dict[str, list[str]] = {}
    for source in sources:
        for option in source.options:
            if option.flag in added:
                added[option.flag].append(source.key)
                continue
            added[option.flag] = [source.key]
            imp.add_argument(
                option.flag,
                dest=option.dest,
                type=option.type,
                action="append" if option.repeat else "store",
                default=None,
                metavar=option.metavar or option.flag.lstrip("-").upper(),
                help=f"{source.key}: {option.help}",
            )
    limits = "; ".join(f"{s.key}: {s.limit_help}" for s in sources)
    imp.add_argument("--limit", type=int, default=None, help=f"at most this many records per unit ({limits})")
    imp.add_argument("--dry-run", action="store_true", help="write nothing; print the plan")
    imp.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Exit code: 0 all imported, 1 some records rejected (each reported), 2 nothing could be
    imported (source unreachable, its index unusable)."""
    from rich.console import Console

    from loaders.pipeline import import_command
    from loaders.sources import get, loaders

    if args.source == CATALOG:
        return _import_catalog(args, settings)
    if args.target is not None:
        return fail(f"FILE|URL: only for {CATALOG} ({args.source} reads --snapshot or --base-url)")
    loader = get(args.source)
    own = {option.dest for option in loader.options}
    for other in loaders():
        for option in other.options:
            if option.dest not in own and getattr(args, option.dest, None):
                mine = ", ".join(o.flag for o in loader.options)
                how = f" ({loader.key} selects {loader.selects} with {mine})" if mine else ""
                owners = ", ".join(s.key for s in loaders() if any(o.flag == option.flag for o in s.options))
                return fail(f"{option.flag}: only for {owners}{how}")
    selection = {option.dest: getattr(args, option.dest, None) for option in loader.options}
    console = Console(stderr=True)
    options = dict(snapshot_dir=args.snapshot, base_url=args.base_url, limit=args.limit, console=console, **selection)
    if args.dry_run:
        # A dry run reads the source only; the database is not touched.
        return asyncio.run(import_command(loader, None, dry_run=True, **options))
    return with_db(settings, lambda db: import_command(loader, db, dry_run=False, **options))


def _import_catalog(args: argparse.Namespace, settings: Settings) -> int:
    from rich.console import Console

    from loaders.pipeline import catalog_import_command
    from loaders.sources import loaders

    if args.target is None:
        return fail(f"FILE|URL: {CATALOG} needs the export to read (a catalog-*.jsonl.zst file or URL)")
    given = [("--snapshot", args.snapshot), ("--base-url", args.base_url), ("--limit", args.limit)]
    given += [(option.flag, getattr(args, option.dest, None)) for source in loaders() for option in source.options]
    for flag, value in given:
        if value:
            return fail(f"{flag}: not an option of {CATALOG} (it reads FILE|URL)")
    console = Console(stderr=True)
    options = dict(target=args.target, console=console)
    if args.dry_run:
        return asyncio.run(catalog_import_command(None, dry_run=True, **options))
    return with_db(settings, lambda db: catalog_import_command(db, dry_run=False, **options))
