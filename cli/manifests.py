"""`kernelindex load`, `export`, `export-schema`: manifests in and out of the store."""

from __future__ import annotations

import argparse
import json
import sys

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
    kinds = [args.kind] if args.kind else list(COLLECTION_BY_KIND)

    async def export(db) -> None:
        for kind in kinds:
            async for doc in db[COLLECTION_BY_KIND[kind]].find({}).sort("_id", 1):
                manifest = {k: doc[k] for k in ("apiVersion", "kind", "metadata", "spec")}
                sys.stdout.write(json.dumps(manifest, ensure_ascii=False, separators=(",", ":")) + "\n")

    with_db(settings, export)
    return 0


def cmd_export_schema(args: argparse.Namespace, settings: Settings) -> int:
    from server.schema import build_schema

    sys.stdout.write(build_schema(settings).as_str() + "\n")
    return 0
