"""`kernelindex load`, `export`, `export-schema`: manifests in and out of the store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cli.common import fail, with_db
from server.settings import Settings
from store.schema import COLLECTION_BY_KIND


def register(sub) -> None:
    load = sub.add_parser("load", help="publish manifests from JSON or YAML files")
    load.add_argument("files", nargs="+", metavar="FILE", help="JSON (one manifest or a list) or YAML documents")
    load.set_defaults(handler=cmd_load)

    export = sub.add_parser("export", help="write stored manifests as JSON Lines to stdout")
    export.add_argument(
        "--kind", default=None, choices=list(COLLECTION_BY_KIND), metavar="KIND", help="only this kind: " + ", ".join(COLLECTION_BY_KIND)
    )
    export.add_argument(
        "--catalog",
        type=Path,
        default=None,
        metavar="OUT.jsonl.zst",
        help="write the registry as a KernelIndex catalog export (zstd JSON Lines, latest.json beside it)",
    )
    export.set_defaults(handler=cmd_export)

    schema = sub.add_parser("export-schema", help="print the GraphQL SDL (schema.graphql)")
    schema.set_defaults(handler=cmd_export_schema)


def cmd_load(args: argparse.Namespace, settings: Settings) -> int:
    from cli.loading import LoadError, load

    try:
        print(load(args.files, settings).line())
    except LoadError as error:
        return fail(str(error))
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    if args.catalog is not None:
        return _export_catalog(args, settings)
    kinds = [args.kind] if args.kind else list(COLLECTION_BY_KIND)

    async def export(db) -> None:
        for kind in kinds:
            async for doc in db[COLLECTION_BY_KIND[kind]].find({}).sort("_id", 1):
                manifest = {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}
                sys.stdout.write(json.dumps(manifest, ensure_ascii=False, separators=(",", ":")) + "\n")

    with_db(settings, export)
    return 0


def _export_catalog(args: argparse.Namespace, settings: Settings) -> int:
    if args.kind:
        return fail("--kind: not with --catalog (a catalog export holds every kind)")
    if not args.catalog.name.endswith(".jsonl.zst"):
        return fail(f"--catalog: {args.catalog}: the file name must end in .jsonl.zst")
    from server.exports import write_export

    async def export(db) -> dict:
        return await write_export(db, args.catalog.parent, name=args.catalog.name)

    pointer = with_db(settings, export)
    counts = ", ".join(f"{table} {count:,}" for table, count in pointer["counts"].items())
    print(f"{args.catalog} · {pointer['lines']:,} lines · {pointer['sizeBytes']:,} bytes · sha256 {pointer['sha256']}", file=sys.stderr)
    print(f"{counts}; latest.json beside it", file=sys.stderr)
    if pointer["leftOut"]:
        left = ", ".join(f"{table} {count:,}" for table, count in pointer["leftOut"].items())
        print(f"left out (not v1alpha1 manifests, which import kernelindex-catalog could not read back): {left}", file=sys.stderr)
    return 0


def cmd_export_schema(args: argparse.Namespace, settings: Settings) -> int:
    from server.schema import build_schema

    sys.stdout.write(build_schema(settings).as_str() + "\n")
    return 0
