"""`kernelindex import SOURCE`: published results from an external source.

The sources, their descriptions and their own options come from the registry
(loaders/sources.py); a new source adds nothing here. A source read whole (the KernelIndex catalog
export, a WholeSourceLoader) takes FILE|URL instead of --snapshot/--base-url."""

from __future__ import annotations

import argparse
import asyncio
import shutil
from pathlib import Path

from cli.common import fail, with_db
from server.settings import Settings


def register(sub) -> None:
    from loaders.sources import loaders

    sources = loaders()
    imp = sub.add_parser(
        "import",
        help="import published results from an external source",
        description="Import published results from a source into the registry. `kernelindex import SOURCE -h`: what "
        "SOURCE imports, its options and examples.",
    )
    verbs = imp.add_subparsers(dest="source", required=True, metavar="SOURCE", title="sources")
    for source in sources:
        if source.takes_target:
            _whole_parser(verbs, source)
        else:
            _source_parser(verbs, source, sources)
    imp.set_defaults(handler=cmd_import)


def _whole_parser(verbs, source) -> None:
    """`kernelindex import KEY FILE|URL`: a source read whole (loaders/common/source.py WholeSourceLoader)."""
    parser = verbs.add_parser(
        source.key,
        help=source.description,
        description=_wrap(f"Import {source.description}.", source.about),
        epilog=_examples(source.key, source.examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", metavar="FILE|URL", help=source.target_help)
    parser.add_argument("--dry-run", action="store_true", help="check everything; write nothing")


def _source_parser(verbs, source, sources) -> None:
    """`kernelindex import KEY`: the source's own help, options and examples. The other sources'
    options are accepted but hidden, so that cmd_import can say whose they are."""
    parser = verbs.add_parser(
        source.key,
        help=source.description,
        description=_wrap(f"Import {source.description}.", source.about),
        epilog=_examples(source.key, source.examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--snapshot", type=Path, default=None, metavar="DIR", help="read saved responses from this directory")
    default = f" (default {source.default_base_url})" if source.default_base_url else ""
    where.add_argument("--base-url", default=None, metavar="URL", help=f"the source API's base URL{default}")
    for owner in sources:
        for option in owner.options:
            if owner is not source and any(option.flag == mine.flag for mine in source.options):
                continue
            parser.add_argument(
                option.flag,
                dest=option.dest,
                type=option.type,
                action="append" if option.repeat else "store",
                default=None,
                metavar=option.metavar or option.flag.lstrip("-").upper(),
                help=option.help if owner is source else argparse.SUPPRESS,
            )
    parser.add_argument("--limit", type=int, default=None, metavar="N", help=f"at most N {source.limit_help}")
    parser.add_argument("--dry-run", action="store_true", help="read the source and print the plan; write nothing")
    parser.set_defaults(target=None)


def _wrap(*paragraphs: str) -> str:
    import textwrap

    width = min(shutil.get_terminal_size().columns, 100) - 2
    return "\n\n".join(textwrap.fill(text, width=width) for text in paragraphs if text)


def _examples(key: str, examples) -> str | None:
    if not examples:
        return None
    lines = ["examples:"]
    for args, what in examples:
        lines += [f"  kernelindex import {key} {args}".rstrip(), f"      {what}"]
    return "\n".join(lines)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Exit code: 0 all imported, 1 some records rejected (each reported), 2 nothing could be
    imported (source unreachable, its index unusable)."""
    from rich.console import Console

    from loaders.pipeline import import_command
    from loaders.sources import get, loaders

    loader = get(args.source)
    if loader.takes_target:
        return _import_whole(loader, args, settings)
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


def _import_whole(loader, args: argparse.Namespace, settings: Settings) -> int:
    from rich.console import Console

    from loaders.pipeline import import_command

    console = Console(stderr=True)
    options = dict(target=args.target, console=console)
    if args.dry_run:
        return asyncio.run(import_command(loader, None, dry_run=True, **options))
    return with_db(settings, lambda db: import_command(loader, db, dry_run=False, **options))
