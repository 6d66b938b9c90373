"""`kernelindex search|show|compare|runs|serving|records`: reading the registry over the API (`--api`).

Each verb calls the MCP server's tool of the same question (mcp_server/server.py), so `--json`
prints exactly the document that tool returns (README "Reading from the command line" lists the
shapes); `--jsonl` prints the document's list one item per line. Without either: a table (rich).
Exit codes: 0 answered, 1 the API refused or could not be reached, or nothing has that name/ID,
2 bad usage (argparse's own code, and a value the API names as bad input).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from cli.common import add_api_options
from server.settings import Settings

Doc = dict[str, Any]
USAGE_CODES = {"BAD_USER_INPUT", "BAD_ID", "GRAPHQL_VALIDATION_FAILED"}


def _output_options(parser: argparse.ArgumentParser) -> None:
    add_api_options(parser, "optional (reads are public)")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the answer as one JSON document")
    form.add_argument("--jsonl", action="store_true", help="print the answer's items as JSON Lines, one per line")


def register(sub) -> None:
    search = sub.add_parser("search", help="operations whose name or title has every word of TEXT")
    search.add_argument("text", nargs="*", help="words to look for (none: every operation)")
    search.add_argument("--first", type=int, default=20, help="how many (at most 50)")
    _output_options(search)
    search.set_defaults(handler=cmd_search)

    show = sub.add_parser("show", help="one operation (by name), run or group (by ID)")
    show.add_argument("what", choices=["operation", "run", "group"])
    show.add_argument("key", metavar="NAME_OR_ID")
    _output_options(show)
    show.set_defaults(handler=cmd_show)

    compare = sub.add_parser("compare", help="2 to 8 runs side by side, per case")
    compare.add_argument("ids", nargs="+", metavar="RUN_ID")
    _output_options(compare)
    compare.set_defaults(handler=cmd_compare)

    runs = sub.add_parser("runs", help="runs, newest first, with filters")
    runs.add_argument("--operation", help="operation name")
    runs.add_argument("--group", help="comparison group ID")
    runs.add_argument("--gpu", help='GPU product, e.g. "NVIDIA H200"')
    runs.add_argument("--source", help='e.g. "sol-execbench", "kernelindex"')
    runs.add_argument("--status", help="passed, failed, incorrect, ...")
    runs.add_argument("--evidence", help="reported, reproducible, kernelindex_verified, independently_replicated")
    runs.add_argument("--include-superseded", action="store_true")
    runs.add_argument("--first", type=int, default=20, help="how many (at most 100)")
    runs.add_argument("--after", help="the endCursor of the page before")
    _output_options(runs)
    runs.set_defaults(handler=cmd_runs)

    serving = sub.add_parser("serving", help="serving runs (MLPerf Inference), newest first, with filters; never ranked")
    serving.add_argument("--model", help='model revision name, e.g. "mlperf-llama2-70b"')
    serving.add_argument("--scenario", help="offline, server or interactive")
    serving.add_argument("--accelerator", help='e.g. "NVIDIA B200-SXM-180GB"')
    serving.add_argument("--vendor", help="accelerator vendor: nvidia, amd")
    serving.add_argument("--system", help="the system under test, as MLPerf names it")
    serving.add_argument("--round", help='e.g. "v5.1"')
    serving.add_argument("--first", type=int, default=20, help="how many (at most 100)")
    serving.add_argument("--after", help="the endCursor of the page before")
    _output_options(serving)
    serving.set_defaults(handler=cmd_serving)

    records = sub.add_parser("records", help="each group's #1, or (--changes) the changes of #1 with their causes")
    records.add_argument("--operation", help="operation name")
    records.add_argument("--gpu", help="GPU product or architecture (current #1s only)")
    records.add_argument("--changes", action="store_true", help="list changes of #1, newest first")
    records.add_argument("--since", help="with --changes: after this ISO 8601 time")
    records.add_argument("--first", type=int, default=50)
    _output_options(records)
    records.set_defaults(handler=cmd_records)


def _run(args: argparse.Namespace, tool: str, items: str, table: Callable[[Doc], None], **arguments: Any) -> int:
    from client.api import ApiClient, api_url
    from mcp_server.server import ToolFailure, build

    url = api_url(args.api)
    public = os.environ.get("KERNELINDEX_PUBLIC_URL") or url.removesuffix("/graphql")
    with ApiClient(url, args.api_key or os.environ.get("KERNELINDEX_API_KEY"), timeout_s=args.timeout) as api:
        try:
            document = build(api, public)[1][tool](**arguments)
        except ToolFailure as failure:
            data = failure.error.data or {}
            print(f"error: {data.get('code', 'ERROR')}: {failure.error.message}", file=sys.stderr)
            return 2 if data.get("code") in USAGE_CODES else 1
    if args.json:
        print(json.dumps(document, ensure_ascii=False, indent=2))
    elif args.jsonl:
        for item in document[items] if items else [document]:
            print(json.dumps(item, ensure_ascii=False))
    else:
        table(document)
    return 0


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*["—" if v is None else str(v) for v in row])
    Console(width=max(100, os.get_terminal_size(1).columns if sys.stdout.isatty() else 160)).print(table)


def _leader(group: Doc) -> str:
    leader = group.get("leader") or group.get("record")
    return f"{leader['title']} ({leader['primaryMeasurement']['display']})" if leader else "no ranked run"


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    def table(doc: Doc) -> None:
        rows = [
            [o["name"], o["title"], len(o["comparisonGroups"]), "; ".join(_leader(g) for g in o["comparisonGroups"])]
            for o in doc["operations"]
        ]
        _table(f"{doc['totalCount']} operations", ["operation", "title", "groups", "#1 per group"], rows)

    return _run(args, "search", "operations", table, text=" ".join(args.text), first=args.first)


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    def table(doc: Doc) -> None:
        if args.what == "operation":
            axes = ", ".join(f"{a['name']}={a['value']}" if a["type"] == "const" else a["name"] for a in doc["axes"])
            print(f"{doc['name']}: {doc['title'] or ''}\n{doc['description']}\naxes: {axes}\n{doc['permalink']}")
            rows = [[g["title"], g["gpu"]["display"], g["size"], _leader(g), g["permalink"]] for g in doc["comparisonGroups"]]
            _table("comparison groups", ["group", "GPU", "runs", "#1", "link"], rows)
        elif args.what == "run":
            m = doc["primaryMeasurement"]
            print(
                f"{doc['title'] or doc['name']}\n{m['statistic']} {m['display']} · rank {doc['rank']} · {doc['evidenceLevel']} · {doc['status']}"
            )
            print(f"{doc['citation']['text']}")
            rows = [
                [
                    c["index"],
                    ", ".join(f"{a['key']}={a['value']}" for a in c["axes"]),
                    c["status"],
                    " ".join(f"{x['statistic']} {x['display']}" for x in c["latency"]),
                ]
                for c in doc["cases"]
            ]
            if rows:
                _table("cases", ["case", "axes", "status", "latency"], rows)
        else:
            print(
                f"{doc['title']} · {doc['gpu']['display']} · ranked by {doc['rankRule']['metric']} ({doc['rankRule']['order']})\n{doc['permalink']}"
            )
            rows = [
                [r["rank"], r["title"], r["implementation"]["name"], r["primaryMeasurement"]["display"], r["evidenceLevel"]]
                for r in doc["runs"]["nodes"]
            ]
            _table("leaderboard", ["rank", "run", "implementation", "primary", "evidence"], rows)

    tool, argument = {"operation": ("get_operation", "name"), "run": ("get_run", "id"), "group": ("get_group", "id")}[args.what]
    return _run(args, tool, "", table, **{argument: args.key})


def cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    def table(doc: Doc) -> None:
        runs = doc["runs"]
        print("same comparison group" if doc["sameGroup"] else "not in one comparison group: the numbers are not comparable")
        rows = [
            [c["index"], ", ".join(f"{a['key']}={a['value']}" for a in c.get("axes", []))] + [c["latencyNs"].get(r["digest"]) for r in runs]
            for c in doc["cases"]
        ]
        rows.append(["all", ""] + [r["primaryMeasurement"]["display"] for r in runs])
        _table("per case (ns)", ["case", "axes"] + [(r["title"] or r["digest"][7:19]) for r in runs], rows)

    return _run(args, "compare_runs", "runs", table, ids=args.ids)


def cmd_runs(args: argparse.Namespace, settings: Settings) -> int:
    def table(doc: Doc) -> None:
        rows = [
            [
                r["observedAt"][:10],
                r["title"] or r["name"],
                r["implementation"]["name"],
                r["environment"]["gpu"]["display"],
                r["rank"],
                r["primaryMeasurement"]["display"],
                r["evidenceLevel"],
                r["id"],
            ]
            for r in doc["runs"]
        ]
        _table(
            f"{len(rows)} runs" + (f" (more: --after {doc['pageInfo']['endCursor']})" if doc["pageInfo"]["hasNextPage"] else ""),
            ["observed", "run", "implementation", "GPU", "rank", "primary", "evidence", "ID"],
            rows,
        )

    return _run(
        args, "list_runs", "runs", table,
        operation=args.operation, group=args.group, gpu=args.gpu, source=args.source, status=args.status,
        evidence_level=args.evidence, include_superseded=args.include_superseded, first=args.first, after=args.after,
    )  # fmt: skip


def cmd_serving(args: argparse.Namespace, settings: Settings) -> int:
    def table(doc: Doc) -> None:
        rows = [
            [
                r["observedAt"][:10],
                r["externalId"],
                (r["model"] or {}).get("name"),
                r["scenario"],
                f"{r['topology']['totalAccelerators']} × {r['topology']['acceleratorModel']}",
                (r["configuration"] or {}).get("system"),
                "; ".join(f"{m['value']:,.2f} {m['unit']} ({m['statistic']})" for m in r["measurements"]),
                r["round"],
                r["digest"],
            ]
            for r in doc["servingRuns"]
        ]
        more = f" (more: --after {doc['pageInfo']['endCursor']})" if doc["pageInfo"]["hasNextPage"] else ""
        _table(
            f"{len(rows)} of {doc['totalCount']} serving runs{more}",
            ["observed", "entry", "model", "scenario", "accelerators", "system", "measurement", "round", "digest"],
            rows,
        )

    return _run(
        args, "list_serving_runs", "servingRuns", table,
        model=args.model, scenario=args.scenario, accelerator=args.accelerator, accelerator_vendor=args.vendor,
        system=args.system, round=args.round, first=args.first, after=args.after,
    )  # fmt: skip


def cmd_records(args: argparse.Namespace, settings: Settings) -> int:
    if args.changes:

        def changes(doc: Doc) -> None:
            rows = [
                [
                    c["at"][:16].replace("T", " "),
                    c["cause"].lower(),
                    c["group"]["title"],
                    c["run"]["title"] if c["run"] else None,
                    c["run"]["primaryMeasurement"]["display"] if c["run"] else None,
                ]
                for c in doc["changes"]
            ]
            _table("changes of #1", ["when", "cause", "group", "#1", "primary"], rows)

        return _run(args, "list_record_changes", "changes", changes, since=args.since, operation=args.operation, first=args.first)

    def table(doc: Doc) -> None:
        rows = [
            [
                r["operation"],
                r["group"]["title"],
                r["group"]["gpu"]["display"],
                _leader(r),
                r["record"]["evidenceLevel"] if r["record"] else None,
            ]
            for r in doc["records"]
        ]
        _table("records (#1 of each group)", ["operation", "group", "GPU", "#1", "evidence"], rows)

    return _run(args, "list_records", "records", table, operation=args.operation, gpu=args.gpu)
