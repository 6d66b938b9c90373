"""The import pipeline: every source's discover → fetch → parse → normalize, then publish.

    report = await run_import("sol-execbench", db, snapshot_dir=..., base_url=..., limit=...,
                              dry_run=..., console=Console(), kernels=[51])
    exit_code = await import_command("gpumode", db, snapshot_dir=..., leaderboards=[...])

A source is a `SourceLoader` (loaders/common/source.py) registered in loaders/sources.py; the
command line (`kernelindex import SOURCE`), `serve`'s start-up data and the docs read that
registry. The pipeline is the only part of an import that holds the database: the source reads
and parses its responses, the pipeline looks up which records' current runs carry the same
fingerprint (those are `unchanged` without being built), has the source normalize the others,
and writes each batch — source snapshots first, then the runs: a loader's `FormatBundle`s (the
v1alpha1 format) through the format's one write path (loaders/common/format_plan.py
`plan_bundles`, then `store.catalog.write_plan`: cohorts keyed as the seed system keys them, one
transaction per batch of cohorts, a changed record's new run superseding its current run), and the
older dialect's `RunManifests` through `store.publish.publish_many`; both idempotent. Batches close
at record-group boundaries (a kernel, a board) once they hold `batch_size` runs, so a comparison
group is re-ranked once. A bad unit, page or record is reported and the rest goes on; a source
that stops answering (`SourceUnreachable`) ends the import after what was read whole is kept.
With `dry_run` nothing is written and the database is not even touched.

A source read whole (a `WholeSourceLoader`: the KernelIndex catalog export,
`run_import("kernelindex-catalog", db, target=FILE_OR_URL)`) is checked whole by its loader and
its plan written by the same writer, `store.catalog.write_plan`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from loaders.common.format_plan import bundle_problems, plan_bundles, plan_objects
from loaders.common.format_set import FormatSet
from loaders.common.http import Response, SourceUnreachable
from loaders.common.progress import import_progress
from loaders.common.report import ImportReport, timed_import
from loaders.common.source import FormatBundle, RecordGroup, Rejected, RunManifests, Skipped, SourceLoader, WholeSourceLoader
from loaders.sources import get
from registry.controlled_format import SOURCE as OUR_SOURCE
from registry.digest import sha256_digest
from registry.evidence import EvidenceLevel
from store.bundle import Bundle
from store.catalog import imported as catalog_imported
from store.catalog import imported_file, write_plan
from store.client import Database
from store.publish import publish_many
from store.records import seed_from_catalog
from store.snapshots import save_snapshots
from store.source_records import has_current_runs, name_older_runs, remember, stored_fingerprints
from store.verified_results import mark_verified, refresh_replication


@dataclass
class Batch:
    """Responses and runs written together (snapshots first)."""

    responses: list[Response] = field(default_factory=list)
    runs: list[FormatBundle | RunManifests] = field(default_factory=list)


def _bundle(item: RunManifests) -> Bundle:
    return Bundle(
        run=item.run,
        definition=item.definition,
        workload=item.workload,
        protocol=item.protocol,
        environment=item.environment,
        implementation=item.implementation,
        source_record=item.source_record,
    )


class _Import:
    """One import's database side: fingerprint lookups, building, batching, writing."""

    def __init__(self, loader: SourceLoader, db: Database | None, report: ImportReport, batch_size: int):
        self.loader, self.db, self.report, self.batch_size = loader, db, report, batch_size
        self.batch = Batch()
        self.lookup: Database | None = None

    async def start(self) -> None:
        # A first import (no current run of this source yet): nothing can be unchanged, no lookups.
        if not self.report.dry_run:
            for source in (self.loader.key, *self.loader.run_sources):
                if await has_current_runs(self.db, source):
                    self.lookup = self.db
                    break

    async def unchanged(self, group: RecordGroup) -> set[str]:
        """The external ids of the group whose current run was made from the same record."""
        if self.lookup is None or not group.records:
            return set()
        wanted = {r.external_id: r.fingerprint for r in group.records}
        source = group.source or self.loader.key
        stored = await stored_fingerprints(self.lookup, source, list(wanted), definition_digest=group.definition_digest)
        return {external_id for external_id, fingerprint in wanted.items() if stored.get(external_id) == fingerprint}

    async def build(self, groups: Sequence[RecordGroup]) -> None:
        """Each record as a run, unless it is unchanged; a batch is written once it is full."""
        report, loader = self.report, self.loader
        for group in groups:
            unchanged = await self.unchanged(group)
            for record in group.records:
                if record.external_id in unchanged:
                    report.unchanged += 1
                else:
                    try:
                        item = loader.normalize(record)
                        problems = bundle_problems(item) if isinstance(item, FormatBundle) else []
                        if problems:
                            raise Rejected("; ".join(problems))
                        self.batch.runs.append(item)
                    except Rejected as error:
                        report.reject(record.label, str(error))
                        continue
                    except Skipped as error:
                        report.skip(record.label, str(error))
                        continue
                report.parsed += 1
                loader.counted(report, record)
            if len(self.batch.runs) >= self.batch_size:
                await self.flush()

    async def flush(self) -> None:
        """Write the batch: its snapshots, then its runs, counting outcomes. In a dry run, only count."""
        batch, report, self.batch = self.batch, self.report, Batch()
        report.snapshots_seen += len({sha256_digest(r.body) for r in batch.responses})
        if report.dry_run:
            return
        started = time.perf_counter()
        responses = [(r.url, r.fetched_at, r.body, r.status) for r in batch.responses]
        report.snapshots_saved += await save_snapshots(self.db, source=self.loader.key, responses=responses)
        report.phase_seconds["write snapshots"] += time.perf_counter() - started
        started = time.perf_counter()
        formatted = [item for item in batch.runs if isinstance(item, FormatBundle)]
        if formatted:
            await self.write_format(formatted)
        older = [item for item in batch.runs if not isinstance(item, FormatBundle)]
        if older:
            bundles = [_bundle(item) for item in older]
            outcomes = await publish_many(self.db, bundles)
            for outcome in outcomes:
                setattr(report, outcome.status, getattr(report, outcome.status) + 1)
            # A run rebuilt and found unchanged (the loader's code changed) gets the new
            # fingerprint, so the next import skips it.
            await remember(
                self.db, {o.run_digest: b.source_record for o, b in zip(outcomes, bundles) if o.status == "unchanged" and b.source_record}
            )
        report.phase_seconds["publish_many"] += time.perf_counter() - started

    async def write_format(self, bundles: list[FormatBundle]) -> None:
        """The format's write path: one plan for the batch, written by store.catalog.write_plan."""
        report = self.report
        plan = plan_bundles(bundles, datetime.now(UTC))
        outcome = await write_plan(self.db, plan, datetime.now(UTC))
        for doc in plan.runs:
            digest = doc["_id"]
            status = "unchanged" if digest in outcome.stored else "superseded" if digest in outcome.superseded else "new"
            setattr(report, status, getattr(report, status) + 1)
        # A run found stored (written by another path, or the loader's code changed) gets this
        # record's fingerprint, so the next import skips it without building it.
        await remember(self.db, {d["_id"]: d["sourceRecord"] for d in plan.runs if d["_id"] in outcome.stored and d.get("sourceRecord")})


def _loader(source: str | SourceLoader) -> SourceLoader:
    return get(source) if isinstance(source, str) else source


async def run_import(
    source_key: str | SourceLoader,
    db: Database | None,
    *,
    snapshot_dir: Path | None = None,
    base_url: str | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    console: Console | None = None,
    source: Any = None,
    batch_size: int | None = None,
    target: str | None = None,
    skip_if_imported: bool = False,
    **selection: Any,
) -> ImportReport:
    """Import one registered source from its live API (`base_url`, default the source's) or a
    snapshot directory; `selection`: the source's own options (e.g. `kernels=[51]`); `limit`: at
    most this many records per unit. A source read whole (`WholeSourceLoader`) reads `target`
    instead (FILE|URL), and with `skip_if_imported` (serve's start) nothing more when that exact
    input is recorded as imported. Raises the source's `fatal` errors when nothing can be
    imported (its index unreachable or unusable, an export refused); everything smaller is in
    the report."""
    loader = _loader(source_key)
    if db is None and not dry_run:
        raise ValueError("a database is needed unless dry_run")
    if isinstance(loader, WholeSourceLoader):
        if target is None:
            raise ValueError(f"{loader.key} reads a target (FILE|URL)")
        return await _run_whole(loader, db, target=target, dry_run=dry_run, console=console, skip_if_imported=skip_if_imported)
    show_progress = console is not None  # no console (e.g. `serve`'s bootstrap): quiet
    console = console or Console(stderr=True)
    source = source or loader.open(snapshot_dir, base_url)
    report = loader.new_report(source.describe(), dry_run)
    job = _Import(loader, db, report, batch_size or loader.batch_size)
    async with timed_import(source, report):
        found = await loader.discover(source, report, **selection)
        job.batch.responses += found.responses
        await job.start()
        with import_progress(console, loader.unit, show=show_progress) as progress:
            task = progress.add_task(loader.title, total=len(found.units), runs=0)
            for position, unit in enumerate(found.units):
                label = loader.unit_label(unit)
                progress.update(task, description=label)
                reader = loader.reader(unit, found, report, limit)
                try:
                    async for fetched in reader.fetch(source):
                        if fetched.response is not None:
                            job.batch.responses.append(fetched.response)
                        if fetched.error is not None:
                            report.reject(fetched.subject, fetched.error)
                            continue
                        reader.parse(fetched)
                except SourceUnreachable as error:
                    # Keep what is complete (whole records), report the rest, stop asking.
                    rest = len(found.units) - position - 1
                    report.reject(label + (f" and the {rest} {loader.unit} after it" if rest else ""), f"source unreachable: {error}")
                    await job.build(reader.groups())
                    break
                reader.done()
                await job.build(reader.groups())
                progress.update(task, advance=1, runs=loader.progress_runs(report))
            await job.build(loader.finish(found, report))
            await job.flush()
            progress.update(task, description=loader.title, runs=loader.progress_runs(report))
    return report


async def import_command(source_key: str | SourceLoader, db: Database | None, *, console: Console | None = None, **options: Any) -> int:
    """What `kernelindex import SOURCE` runs: the import, then its report. Exit code: 0 all
    imported, 1 some records rejected (each reported), 2 nothing could be imported (one
    `error`-styled line naming why, or for a source read whole one `error:` line per problem)."""
    loader = _loader(source_key)
    console = console or Console()
    try:
        report = await run_import(loader, db, console=console, **options)
    except loader.fatal as error:
        if isinstance(loader, WholeSourceLoader):
            loader.print_fatal(error, console)
        else:
            console.print(f"[bold red]{loader.title} import failed:[/bold red] {error}")
        return 2
    loader.print_report(report, console)
    if isinstance(loader, WholeSourceLoader):
        return loader.exit_code(report)
    return 1 if report.rejected else 0


async def import_bundled(db: Database, data_dir: Path) -> None:
    """`serve`'s start-up data: every registered source whose folder under `data_dir` exists
    (data/snapshots/KEY/ unless the loader names another), quietly and idempotently."""
    for loader, folder in bundled_sources(data_dir):
        if isinstance(loader, WholeSourceLoader):
            await run_import(loader, db, target=str(folder), console=None, skip_if_imported=True)
        else:
            await run_import(loader, db, snapshot_dir=folder, console=None)


def bundled_sources(data_dir: Path) -> list[tuple[SourceLoader, Path]]:
    """The registered sources with data under `data_dir` (data/snapshots/KEY/ unless the loader
    names another folder), in registration order: what `serve` imports on start."""
    from loaders.sources import loaders

    found = []
    for loader in loaders():
        folder = data_dir / (loader.bundled or f"snapshots/{loader.key}")
        present = loader.bundled_present(folder) if isinstance(loader, WholeSourceLoader) else folder.is_dir()
        if present:
            found.append((loader, folder))
    return found


# ---------------------------------------------------------------- sources read whole
#
# A source read whole (the KernelIndex catalog export) is checked whole before anything is written
# (its loader's `plan`: fetch, parse, verify, plan), then written by the format's one writer
# (store.catalog.write_plan) in bulk: 7,857 runs in 1,912 cohorts, each cohort ranked once.


async def _run_whole(
    loader: WholeSourceLoader, db: Database | None, *, target: str, dry_run: bool, console: Console | None, skip_if_imported: bool
) -> Any:
    """Raise the loader's `fatal` error when the input cannot be imported (nothing written)."""
    show = console is not None
    console = console or Console(stderr=True)
    report = loader.new_report(target, dry_run)
    started = time.perf_counter()
    phase = started
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"), TimeElapsedColumn(),
        console=console, transient=False, disable=not show,
    ) as progress:  # fmt: skip
        task = progress.add_task(f"read the {loader.title}", total=loader.steps)

        def step(name: str, description: str) -> None:
            nonlocal phase
            now = time.perf_counter()
            report.phase_seconds[name] = now - phase
            phase = now
            progress.update(task, advance=1, description=description)

        async def imported(*, sha256: str | None = None, file_stat: dict[str, Any] | None = None) -> bool:
            """Whether this exact input is recorded as imported: by its digest, or (cheaper: nothing
            read) by the stat of the local file an import recorded."""
            if not skip_if_imported or db is None:
                return False
            if file_stat is not None:
                return await imported_file(db, file_stat) is not None
            return await catalog_imported(db, sha256) is not None

        plan = await loader.plan(target, report, step, imported)
        if plan is not None:
            if not dry_run:
                report.outcome = await write_plan(db, plan, datetime.now(UTC))
            step("write", "done")
        elif skip_if_imported and db is not None and not dry_run:
            # Recorded as imported: a database imported before the ledger was seeded from the
            # catalog's record events gets them now (store/records.seed_from_catalog; idempotent).
            await seed_from_catalog(db, datetime.now(UTC))
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------- manifest sets of the format


@dataclass
class SetOutcome:
    """What `publish_format_set` wrote: objects new / unchanged, and each run's status."""

    objects_new: int = 0
    objects_unchanged: int = 0
    runs: dict[str, str] = field(default_factory=dict)  # run digest → new | unchanged | superseded

    def count(self, status: str) -> int:
        return sum(1 for s in self.runs.values() if s == status)


async def publish_format_set(
    db: Database,
    manifests: FormatSet,
    *,
    verification: dict[str, Any] | None = None,
    also: Any = None,
) -> SetOutcome:
    """Write a set of v1alpha1 manifests (loaders/common/format_set.py) through the format's one
    write path. Our own runs of the older dialect with the same names are superseded by theirs.
    `verification` ({signer, jobId, envelope}): the set's one run is a runner's signed result, stored
    as KernelIndex Verified; `also` commits with it (store.catalog.write_plan)."""
    now = datetime.now(UTC)
    ours = [b.run.metadata.name for b in manifests.bundles if (b.run.spec.to_json().get("sourceNative") or {}).get("source") == OUR_SOURCE]
    if ours:
        await name_older_runs(db, OUR_SOURCE, ours)
    plan = plan_bundles(manifests.bundles, now)
    plan_objects(plan, manifests.loose, now)
    if verification is not None:
        (run,) = plan.runs
        run.update(evidenceLevel=EvidenceLevel.kernelindex_verified.value, verifiedBy=[verification["signer"]], verification=verification)
    plan.also = also
    outcome = await write_plan(db, plan, now)
    out = SetOutcome(objects_new=sum(outcome.new.values()), objects_unchanged=sum(outcome.unchanged.values()))
    for doc in plan.runs:
        digest = doc["_id"]
        out.runs[digest] = "unchanged" if digest in outcome.stored else "superseded" if digest in outcome.superseded else "new"
    return out


async def publish_verified(
    db: Database, result: Any, objects: dict[str, Any], *, runner_key_id: str | None = None, also: Any = None
) -> SetOutcome:
    """A runner's verified result (store.verified_results.SignedResult) with the stored objects it
    names: published as KernelIndex Verified, `also` (the job's completion) in its transaction."""
    bundle = FormatBundle(run=result.run, environment=result.environment, source=OUR_SOURCE, **objects)
    verification = result.verification(runner_key_id)

    async def verify_and_also(session: Any) -> None:
        await mark_verified(db, result.digest, verification, session)
        await refresh_replication(db, result.run.spec.to_json(), result.environment.spec.to_json()["hardware"]["product"], session)
        if also is not None:
            await also(session)

    return await publish_format_set(db, FormatSet(bundles=[bundle]), verification=verification, also=verify_and_also)
