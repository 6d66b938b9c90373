"""`kernelindex import SOURCE`: published results from an external source.

The sources, their descriptions and their own options come from the registry
(loaders/sources.py); a new source adds nothing here."""

from __future__ import annotations

import argparse
import asyncio
import shutil
from pathlib import Path

from cli.common import fail, with_db
from server.settings import Settings

# The KernelIndex catalog export is not a per-record source of the pipeline's registry: it is
# checked whole and written in bulk (loaders/pipeline.py run_catalog_import), so it is a verb here.
CATALOG = "kernelindex-catalog"
CATALOG_DESCRIPTION = "the KernelIndex public catalog export (catalog-*.jsonl.zst with its latest.json; a FILE or URL)"
# Where the bundled export is published (data/kernelindex-catalog/latest.json's "url"): -h's example.
CATALOG_URL = "https://raw.githubusercontent.com/SamMausberg/KernelIndex/main/registry/exports/catalog-2026-08-16-0022af0b.jsonl.zst"


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
        _source_parser(verbs, source, sources)
    catalog = verbs.add_parser(
        CATALOG,
        help=CATALOG_DESCRIPTION,
        description=_wrap(
            f"Import {CATALOG_DESCRIPTION}.",
            "The latest.json beside the export is checked (sha256, size, line count), then every row's digests, "
            "cohort keys, references and v1alpha1 models, before anything is written: a corrupt or truncated file "
            "writes nothing (exit 2); a refused row is reported and the rest imported (exit 1).",
        ),
        epilog=_examples(
            CATALOG,
            [
                ("data/kernelindex-catalog/catalog-2026-08-16-0022af0b.jsonl.zst", "the bundled export (a checkout's data/)"),
                (CATALOG_URL + " --dry-run", "the same export from the repository it is published in; check it, write nothing"),
            ],
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    catalog.add_argument("target", metavar="FILE|URL", help="the export (catalog-*.jsonl.zst), its latest.json, or their folder")
    catalog.add_argument("--dry-run", action="store_true", help="check everything; write nothing")
    imp.set_defaults(handler=cmd_import)


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

    if args.source == CATALOG:
        return _import_catalog(args, settings)
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

    console = Console(stderr=True)
    options = dict(target=args.target, console=console)
    if args.dry_run:
        return asyncio.run(catalog_import_command(None, dry_run=True, **options))
    return with_db(settings, lambda db: catalog_import_command(db, dry_run=False, **options))
