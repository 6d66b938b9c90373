"""`kernelindex import sol-execbench`: the steps strung together, with progress and a report.

    exit_code = await import_command(db, snapshot_dir=..., base_url=..., kernels=..., limit=...,
                                     dry_run=..., console=Console())

`run_import` does the work and returns an `ImportReport`; `import_command` also prints it and
turns a fatal source error (host unreachable, kernel list unusable) into exit code 2.

Per kernel: fetch and parse its detail, normalize its OperationSpec and WorkloadSuite, fetch
every page of submissions, parse and fingerprint each record, and normalize each record whose
current run does not carry its fingerprint (the others are `unchanged` as they are). A bad kernel, page or record is
rejected with its reason and the rest goes on. Runs are published in batches of about
`batch_size` (whole kernels, so a comparison group is re-ranked once; snapshots first). With
`dry_run` nothing is written (the database is not even touched) and the
report carries the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from loaders.common.command import run_command
from loaders.common.progress import import_progress
from loaders.common.publish import Batch, flush
from loaders.common.report import timed_import
from loaders.common.source_records import lookup_database, unchanged_records
from loaders.sol_execbench import SOURCE
from loaders.sol_execbench.discover import discover
from loaders.sol_execbench.fetch import (
    FetchError,
    Source,
    SourceUnreachable,
    fetch_kernel,
    fetch_submission_pages,
    open_source,
)
from loaders.sol_execbench.normalize import (
    KernelManifests,
    Rejected,
    Skipped,
    normalize_kernel,
    normalize_submission,
    source_record,
)
from loaders.sol_execbench.parse import ParseError, Submission, parse_kernel, parse_submission, record_label
from loaders.sol_execbench.publish import to_bundle
from loaders.sol_execbench.report import ImportReport, KernelPlan, print_report
from registry.digest import sha256_digest
from store.client import Database

BATCH_SIZE = 2000


async def run_import(
    db: Database | None,
    *,
    snapshot_dir: Path | None = None,
    base_url: str | None = None,
    kernels: list[int] | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    console: Console | None = None,
    source: Source | None = None,
    batch_size: int = BATCH_SIZE,
) -> ImportReport:
    """Import SOL-ExecBench from the live API (`base_url`, default the public one) or from a
    snapshot directory. `kernels`: only these ids; `limit`: at most this many submissions per
    kernel (in the source's order; later pages are not fetched). Raises `FetchError` /
    `ParseError` when the kernel list itself cannot be had; everything smaller is reported in
    the returned `ImportReport`."""
    if db is None and not dry_run:
        raise ValueError("a database is needed unless dry_run")
    show_progress = console is not None  # no console (e.g. `serve`'s bootstrap): quiet
    console = console or Console(stderr=True)
    source = source or open_source(snapshot_dir=snapshot_dir, base_url=base_url)
    report = ImportReport(source=source.describe(), dry_run=dry_run)
    async with timed_import(source, report):
        found = await discover(source, kernel_ids=kernels)
        report.kernels_listed = len(found.listed)
        report.kernels_selected = len(found.selected)
        for subject, reason in found.problems:
            report.reject(subject, reason)
        batch = Batch(responses=[found.response])
        # A kernel's runs can only be stored by an earlier import (each kernel comes once).
        lookup = None if dry_run else await lookup_database(db, SOURCE)

        with import_progress(console, "kernels", show=show_progress) as progress:
            task = progress.add_task("SOL-ExecBench", total=len(found.selected), runs=0)
            for position, summary in enumerate(found.selected):
                progress.update(task, description=f"kernel {summary.id}")
                try:
                    await _import_kernel(lookup, source, summary.id, report, batch, limit)
                except SourceUnreachable as error:
                    # Keep what is complete (whole runs), report the rest, stop asking.
                    rest = len(found.selected) - position - 1
                    subject = f"kernel {summary.id}" + (f" and the {rest} kernels after it" if rest else "")
                    report.reject(subject, f"source unreachable: {error}")
                    break
                if len(batch.runs) >= batch_size:
                    await _flush(db, batch, report)
                    batch = Batch()
                progress.update(task, advance=1, runs=report.parsed)
            await _flush(db, batch, report)
            progress.update(task, description="SOL-ExecBench")
    return report


async def _flush(db: Database | None, batch: Batch, report: ImportReport) -> None:
    """Write one batch: its snapshots, then its runs. In a dry run, only count."""
    await flush(db, SOURCE, batch, report, to_bundle)


@dataclass(frozen=True)
class Record:
    """A parsed submission, the page it was read from, and its fingerprint (source_record)."""

    label: str
    submission: Submission
    snapshot_digest: str
    fingerprint: str


async def _import_kernel(
    lookup: Database | None, source: Source, kernel_id: int, report: ImportReport, batch: Batch, limit: int | None = None
) -> None:
    """One kernel: its detail, then its submissions, at most `limit` of them (pages stop there).
    `lookup`: where stored fingerprints are looked up (None: every record is built)."""
    subject = f"kernel {kernel_id}"
    try:
        response = await fetch_kernel(source, kernel_id)
    except SourceUnreachable:
        raise
    except FetchError as error:
        if error.response is not None:
            batch.responses.append(error.response)
        report.reject(subject, error.reason)
        return
    batch.responses.append(response)
    try:
        kernel = parse_kernel(response.body)
        if kernel.id != kernel_id:
            raise Rejected(f"GET /kernels/{kernel_id} answered kernel {kernel.id}")
        manifests = normalize_kernel(kernel)
    except (ParseError, Rejected) as error:
        report.reject(subject, str(error))
        return
    report.kernels_imported += 1
    plan = KernelPlan(kernel_id, kernel.name)
    report.plan.append(plan)

    records: list[Record] = []
    try:
        await _read_records(source, kernel_id, manifests, plan, report, batch, records, limit)
    except SourceUnreachable:
        await _build_runs(lookup, records, manifests, plan, report, batch)  # whole runs read so far are kept
        raise
    await _build_runs(lookup, records, manifests, plan, report, batch)


async def _read_records(
    source: Source,
    kernel_id: int,
    manifests: KernelManifests,
    plan: KernelPlan,
    report: ImportReport,
    batch: Batch,
    records: list[Record],
    limit: int | None,
) -> None:
    """The kernel's submission pages into `records` (each parsed, fingerprinted), at most `limit`."""
    subject = f"kernel {kernel_id}"
    seen: set[int] = set()
    async for fetched in fetch_submission_pages(source, kernel_id):
        if limit is not None and plan.discovered >= limit:
            break
        if fetched.response is not None:
            batch.responses.append(fetched.response)
        if fetched.error is not None:
            report.reject(f"{subject} submissions offset {fetched.offset}", fetched.error)
            continue
        snapshot_digest = sha256_digest(fetched.response.body)
        for raw in fetched.page.records:
            if limit is not None and plan.discovered >= limit:
                break
            label = record_label(raw)
            try:
                submission = parse_submission(raw)
            except ParseError as error:
                report.discovered += 1
                plan.discovered += 1
                report.reject(label, str(error))
                continue
            if submission.id in seen:
                continue  # paging shifted under us: the same record twice
            seen.add(submission.id)
            report.discovered += 1
            plan.discovered += 1
            records.append(Record(label, submission, snapshot_digest, source_record(manifests, raw)))
        if limit is not None and plan.discovered >= limit:
            break  # do not fetch pages we will not use


async def _build_runs(
    lookup: Database | None, records: list[Record], manifests: KernelManifests, plan: KernelPlan, report: ImportReport, batch: Batch
) -> None:
    """A kernel's records as runs; a record whose current run has its fingerprint is counted
    unchanged without being built again."""
    fingerprints = {str(r.submission.id): r.fingerprint for r in records}
    unchanged = await unchanged_records(lookup, SOURCE, fingerprints, definition_digest=manifests.definition_digest)
    for record in records:
        submission = record.submission
        if str(submission.id) in unchanged:
            report.unchanged += 1
        else:
            try:
                run = normalize_submission(submission, manifests, snapshot_digest=record.snapshot_digest, source_record=record.fingerprint)
            except Rejected as error:
                report.reject(record.label, str(error))
                continue
            except Skipped as error:
                report.skip(record.label, str(error))
                continue
            batch.runs.append(run)
        report.parsed += 1
        plan.runs += 1
        plan.groups[f"{submission.gpu_type} · {submission.evaluation_stack_version}"] += 1


async def import_command(db: Database | None, *, console: Console | None = None, **options) -> int:
    """What `kernelindex import sol-execbench` runs. Exit code: 0 all imported, 1 some records
    rejected, 2 nothing could be imported (source unreachable, kernel list unusable)."""
    return await run_command(
        run_import, print_report, title="SOL-ExecBench", fatal=(FetchError, ParseError), db=db, console=console, **options
    )
