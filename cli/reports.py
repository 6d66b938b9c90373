"""`kernelindex reports list`: the issue reports readers sent about runs (runReportIssue, or the
run page's "Report an issue with this run"), newest first, read straight from the store."""

from __future__ import annotations

import argparse

from cli.common import with_db
from server.settings import Settings


def register(sub) -> None:
    reports_parser = sub.add_parser("reports", help="issue reports sent about runs")
    reports_sub = reports_parser.add_subparsers(dest="reports_command", required=True, metavar="{list}")
    listing = reports_sub.add_parser("list", help="list issue reports, newest first")
    listing.add_argument("--run", default=None, metavar="DIGEST", help="only the reports about this run (sha256:...)")
    listing.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    listing.set_defaults(handler=cmd_list)


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from store.issue_reports import list_reports

    for doc in with_db(settings, lambda db: list_reports(db, run_digest=args.run, limit=args.limit)):
        reporter = doc["reporter"]["name"] if doc.get("reporter") else "anonymous"
        text = " ".join(doc["text"].split())
        print(f"{doc['_id']}\t{doc['createdAt']:%Y-%m-%d %H:%M}\t{doc['runDigest']}\t{doc['category']}\t{reporter}\t{text}")
    return 0
