"""`kernelindex import gpumode`: the steps strung together, with progress and a report.

    exit_code = await import_command(db, snapshot_dir=..., base_url=..., leaderboards=...,
                                     limit=..., dry_run=..., console=Console())

Every config is read page by page; each row is parsed and, when it is a passing leaderboard
submission of a selected board, kept as a candidate. After the last page the best candidate
per (board, user, GPU) becomes a run; runs are published in batches of about `batch_size`
(snapshots first). A bad page or row is reported and the rest goes on; with `dry_run` nothing
is written (the database is not touched) and the report carries the plan.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from rich.console import Console

from loaders.common.command import run_command
from loaders.common.http import FetchError, SourceUnreachable
from loaders.common.progress import import_progress
from loaders.common.publish import Batch, flush
from loaders.common.report import timed_import
from loaders.common.source_records import lookup_database, unchanged_records
from loaders.gpumode import SOURCE
from loaders.gpumode.discover import Discovery, discover
from loaders.gpumode.fetch import Source, fetch_pages, open_source
from loaders.gpumode.normalize import (
    FLAT,
    PER_SHAPE,
    Board,
    Candidate,
    Rejected,
    Skipped,
    candidate_for,
    definition_for,
    external_id_of,
    record_fingerprint,
    run_for,
)
from loaders.gpumode.parse import ParseError, PerShapeRow, parse_submission, row_label
from loaders.gpumode.publish import to_bundle
from loaders.gpumode.report import ImportReport, print_report
from registry.digest import sha256_digest
from store.client import Database

BATCH_SIZE = 2000


async def run_import(
    db: Database | None,
    *,
    snapshot_dir: Path | None = None,
    base_url: str | None = None,
    leaderboards: list[str] | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    console: Console | None = None,
    source: Source | None = None,
    batch_size: int = BATCH_SIZE,
) -> ImportReport:
    """Import KernelBot results from the datasets-server (`base_url`, default the public one)
    or a snapshot directory. `leaderboards`: only these board names; `limit`: at most this many
    rows per config (in the source's order; later pages are not fetched). Raises `FetchError` /
    `ParseError` when the config list cannot be had."""
    if db is None and not dry_run:
        raise ValueError("a database is needed unless dry_run")
    show_progress = console is not None
    console = console or Console(stderr=True)
    source = source or open_source(snapshot_dir=snapshot_dir, base_url=base_url)
    report = ImportReport(source=source.describe(), dry_run=dry_run)
    async with timed_import(source, report):
        found = await discover(source, leaderboards=leaderboards)
        report.configs_listed, report.boards_listed = found.configs_listed, len(found.boards)
        for subject, reason in found.problems:
            report.reject(subject, reason)
        batch = Batch(responses=list(found.responses))
        best: dict[tuple[str, str, str], Candidate] = {}
        with import_progress(console, "configs", show=show_progress) as progress:
            task = progress.add_task("GPU MODE", total=len(found.configs), runs=0)
            for position, config in enumerate(found.configs):
                progress.update(task, description=config)
                try:
                    await _read_config(source, config, found, report, batch, best, limit)
                except SourceUnreachable as error:
                    rest = len(found.configs) - position - 1
                    subject = config + (f" and the {rest} configs after it" if rest else "")
                    report.reject(subject, f"source unreachable: {error}")
                    break
                report.configs_read += 1
                progress.update(task, advance=1, runs=len(best))
            # A current run made from the same row by the same code is unchanged: not rebuilt.
            fingerprints = {external_id_of(c): record_fingerprint(c) for c in best.values()}
            lookup = None if dry_run else await lookup_database(db, SOURCE)
            by_board: dict[Board, dict[str, str]] = defaultdict(dict)
            for candidate in best.values():
                by_board[candidate.board][external_id_of(candidate)] = fingerprints[external_id_of(candidate)]
            unchanged: set[str] = set()
            for board, of_board in by_board.items():  # one lookup per board: its runs share a definition
                unchanged |= await unchanged_records(lookup, SOURCE, of_board, definition_digest=definition_for(board)[1])
            for candidate in sorted(best.values(), key=lambda c: c.key):
                fingerprint = fingerprints[external_id_of(candidate)]
                if external_id_of(candidate) in unchanged:
                    report.unchanged += 1
                else:
                    try:
                        batch.runs.append(run_for(candidate, fingerprint))
                    except Rejected as error:
                        report.reject(f"submission {candidate.submission.submission_id}", str(error))
                        continue
                report.parsed += 1
                report.board(candidate.board.name).runs[candidate.product] += 1
                if len(batch.runs) >= batch_size:
                    await flush(db, SOURCE, batch, report, to_bundle)
                    batch = Batch()
            await flush(db, SOURCE, batch, report, to_bundle)
            progress.update(task, description="GPU MODE", runs=report.parsed)
    return report


async def _read_config(
    source: Source,
    config: str,
    found: Discovery,
    report: ImportReport,
    batch: Batch,
    best: dict[tuple[str, str, str], Candidate],
    limit: int | None,
) -> None:
    """Every page of one config (at most `limit` rows): keep each user's best candidate."""
    read = 0
    async for fetched in fetch_pages(source, config):
        if fetched.response is not None:
            batch.responses.append(fetched.response)
        if fetched.error is not None:
            report.reject(f"{config} offset {fetched.offset}", fetched.error)
            continue
        snapshot_digest = sha256_digest(fetched.response.body)
        for row in fetched.page.rows:
            if limit is not None and read >= limit:
                return
            read += 1
            label = f"{config} {row_label(row)}"
            try:
                submission = parse_submission(row)
            except ParseError as error:
                report.discovered += 1
                report.reject(label, str(error))
                continue
            per_shape = isinstance(submission, PerShapeRow)
            board = found.board_by_id(submission.leaderboard_id) if per_shape else found.board_by_name(submission.problem_name)
            if not found.wanted(board):
                continue
            report.discovered += 1
            plan = report.board(board.name)
            plan.kind, plan.listed = (PER_SHAPE if per_shape else FLAT), board.listed
            plan.rows += 1
            try:
                candidate = candidate_for(submission, board, config=config, snapshot_digest=snapshot_digest, row=row.data)
            except Rejected as error:
                report.reject(label, str(error))
                continue
            except Skipped as error:
                report.skip(label, str(error))
                continue
            report.candidates += 1
            held = best.get(candidate.key)
            if held is None or candidate.order() < held.order():
                best[candidate.key] = candidate
            if held is not None:
                report.not_best += 1
        if limit is not None and read >= limit:
            return


async def import_command(db: Database | None, *, console: Console | None = None, **options) -> int:
    """What `kernelindex import gpumode` runs. Exit code: 0 all imported, 1 some rows rejected,
    2 nothing could be imported (source unreachable, config list unusable)."""
    return await run_command(run_import, print_report, title="GPU MODE", fatal=(FetchError, ParseError), db=db, console=console, **options)
