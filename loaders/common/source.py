"""What a source implements to plug into the import pipeline (loaders/pipeline.py).

A source lives in its own folder (`loaders/<name>/`) with a `loader.py` holding one
`SourceLoader` instance, and is registered by one line in `loaders/sources.py`. Its steps:

- `open(snapshot_dir, base_url)` — the source to read: its HTTP API or a snapshot directory
  (anything with `describe()` and `async aclose()`; loaders/common/http.py, snapshot.py);
- `discover(source, report, **selection)` — what to import: the `Discovery`'s responses (kept as
  source snapshots) and its units (kernels, configs, …), in order;
- `reader(unit, found, report, limit)` — one unit's `UnitReader`: `fetch(source)` yields each
  response (`Fetched`), `parse(fetched)` turns it into records held in memory, `groups()` hands
  back the records ready to be built (`RecordGroup`s, each with the one definition of its runs);
- `finish(found, report)` — record groups only known once every unit is read (e.g. the best
  submission per user across configs);
- `normalize(record)` — a record as a `FormatBundle` (the KernelIndex v1alpha1 format: the pipeline
  writes it through the format's one write path, loaders/common/format_plan.py and
  store.catalog.write_plan, keyed by its seed-style cohort) or, for a source not yet converted, as
  `RunManifests` (our older dialect, published by store.publish); or `Rejected` / `Skipped` with
  the reason.

A loader never holds the database: `parse`, `groups` and `normalize` are pure (no I/O; they may
count into the in-memory report), and the pipeline alone reads the stored fingerprints (which
records are unchanged), keeps the snapshots and publishes. The import-linter contract
"Source loaders never hold the database" (pyproject.toml) keeps it so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console

from loaders.common.http import FetchError, Response
from loaders.common.report import ImportReport
from registry.format import FormatManifest
from registry.manifests import Manifest


class Rejected(ValueError):
    """A record that cannot become a run (bad input); the message is the reason."""


class Skipped(ValueError):
    """A valid record that is not a run (e.g. a disqualified entry); the message is the reason."""


@dataclass(frozen=True)
class Option:
    """A command-line option of one source, passed to its `discover` as `dest=` (a list when
    `repeat`). E.g. Option("--kernel", "kernels", "kernel id (repeatable)", type=int)."""

    flag: str
    dest: str
    help: str
    type: Callable[[str], Any] = str
    repeat: bool = True
    metavar: str | None = None


@dataclass
class Discovery:
    """What `discover` found: the responses read to find it, and the units to import in order."""

    responses: list[Response] = field(default_factory=list)
    units: list[Any] = field(default_factory=list)
    data: Any = None  # the source's own (e.g. its board list), for its readers and `finish`


@dataclass(frozen=True)
class Fetched:
    """One response of a unit, or why there is none (`error`, reported against `subject`)."""

    subject: str
    response: Response | None = None
    error: str | None = None
    data: Any = None  # the source's parsed page, when its fetch step parses the envelope


@dataclass(frozen=True)
class Record:
    """A source record read and fingerprinted, not yet built: `external_id` names it in the
    source (the run's `source.externalId`), `fingerprint` is loaders/common/source_records.py's."""

    external_id: str
    fingerprint: str
    label: str  # how problems name it: "submission 37369"
    data: Any  # what `normalize` builds the run from


@dataclass
class RecordGroup:
    """Records whose runs share one definition (one fingerprint lookup for all of them)."""

    definition_digest: str | None
    records: list[Record] = field(default_factory=list)
    # The source its runs are stored under, when it is not the loader's key (GPU MODE's boards
    # with the catalog's identity: `gpumode-kernelbot`); where their fingerprints are looked up.
    source: str | None = None


@dataclass(frozen=True)
class RunManifests:
    """A run and every object it references, as `normalize` returns it."""

    run: Manifest
    definition: Manifest
    workload: Manifest
    protocol: Manifest
    environment: Manifest
    implementation: Manifest
    source_record: str | None = None


@dataclass(frozen=True)
class FormatBundle:
    """One run in the KernelIndex v1alpha1 format with every object it references, each already
    validated (`registry.format.make_format_manifest` / `parse_format_manifest`): what a loader's
    `normalize` returns and the pipeline writes. The run names `workload` (a WorkloadCase or
    WorkloadSuite), `implementation`, `protocol` and `environment` by digest; `operation` is the
    workload's OperationSpec; `cases` are a suite's WorkloadCases (stored too); `project` the
    implementation's SoftwareProject, if any. Beside the manifests (never in them, so the digests
    stay the seed system's): `source` (the loader's key, for a run without sourceNative),
    `source_record` (the record's fingerprint, loaders/common/source_records.py),
    `source_snapshot` (sha256 of the response it was read from), `project_name` (display)."""

    run: FormatManifest
    operation: FormatManifest
    workload: FormatManifest
    implementation: FormatManifest
    protocol: FormatManifest
    environment: FormatManifest
    cases: tuple[FormatManifest, ...] = ()
    project: FormatManifest | None = None
    source: str | None = None
    source_record: str | None = None
    source_snapshot: str | None = None
    project_name: str | None = None
    operation_title: str | None = None  # the source's display title of the operation (`sourceTitle`)


class UnitReader:
    """One unit's reading: the pipeline iterates `fetch`, hands each good response to `parse`,
    then takes `groups()`; after a `SourceUnreachable` it still takes `groups()` (whole records
    read so far are kept). `done()` is called when the unit was read to its end."""

    async def fetch(self, source: Any) -> AsyncIterator[Fetched]:
        raise NotImplementedError
        yield  # pragma: no cover

    def parse(self, fetched: Fetched) -> None:
        raise NotImplementedError

    def groups(self) -> Sequence[RecordGroup]:
        return ()

    def done(self) -> None:
        pass


class SourceLoader:
    """One source. Subclass it in `loaders/<name>/loader.py`, set the class attributes, implement
    the steps, and register an instance in `loaders/sources.py`."""

    key: ClassVar[str]  # "sol-execbench": `kernelindex import KEY`, the runs' source, data/snapshots/KEY/
    title: ClassVar[str]  # "SOL-ExecBench": the progress bar, the report, the fatal error line
    description: ClassVar[str]  # one line for `kernelindex import -h`
    about: ClassVar[str] = ""  # `kernelindex import KEY -h`: what it imports, from where, what it skips
    examples: ClassVar[tuple[tuple[str, str], ...]] = ()  # ("--kernel 51 --dry-run", "what that does") for KEY's -h
    default_base_url: ClassVar[str | None] = None  # the live API --base-url replaces, for KEY's -h
    unit: ClassVar[str]  # what the progress bar counts: "kernels"
    record_title: ClassVar[str] = ""  # the source's display name on run pages (default: title)
    record_prefix: ClassVar[str] = "record"  # how the source names one record: "<prefix>/<externalId>"
    options: ClassVar[tuple[Option, ...]] = ()
    selects: ClassVar[str] = ""  # what its options select ("kernels"), for the CLI's errors
    limit_help: ClassVar[str] = "records"  # what --limit counts: "submissions per kernel"
    fatal: ClassVar[tuple[type[Exception], ...]] = (FetchError,)  # nothing could be imported: exit 2
    bundled: ClassVar[str | None] = None  # the folder under data/ that `serve` imports (default snapshots/KEY)
    batch_size: ClassVar[int] = 2000
    takes_target: ClassVar[bool] = False  # a positional FILE|URL (WholeSourceLoader) instead of --snapshot/--base-url
    run_sources: ClassVar[tuple[str, ...]] = ()  # other sources its runs are stored under (RecordGroup.source)

    def open(self, snapshot_dir: Path | None, base_url: str | None) -> Any:
        raise NotImplementedError

    def new_report(self, source: str, dry_run: bool) -> ImportReport:
        return ImportReport(source=source, dry_run=dry_run)

    def print_report(self, report: ImportReport, console: Console) -> None:
        raise NotImplementedError

    async def discover(self, source: Any, report: ImportReport, **selection: Any) -> Discovery:
        raise NotImplementedError

    def unit_label(self, unit: Any) -> str:
        return str(unit)

    def reader(self, unit: Any, found: Discovery, report: ImportReport, limit: int | None) -> UnitReader:
        raise NotImplementedError

    def finish(self, found: Discovery, report: ImportReport) -> Sequence[RecordGroup]:
        return ()

    def normalize(self, record: Record) -> FormatBundle | RunManifests:
        raise NotImplementedError

    def counted(self, report: ImportReport, record: Record) -> None:
        """A record that is (or stays) a run: the source's own counts, after `report.parsed`."""

    def progress_runs(self, report: ImportReport) -> int:
        return report.parsed


class WholeSourceLoader(SourceLoader):
    """A source read and checked whole before anything is written (the KernelIndex catalog
    export): `kernelindex import KEY FILE|URL` (the target is required, the per-record options
    are not its), and `serve` imports its `bundled` folder when `bundled_present` says so. The
    pipeline runs `plan` under a progress bar of `steps` steps (`step(name, next description)`
    after each; `await imported(sha256=...)` or `imported(file_stat=...)`: whether that exact input
    is recorded as imported, by its digest or by the stat of a local file an import recorded, so
    `plan` returns None and nothing is read further) and writes the plan it returns with the format's
    one writer (store.catalog.write_plan), setting `report.outcome`; a `fatal` error means nothing
    was written (`print_fatal` says why)."""

    takes_target: ClassVar[bool] = True
    target_help: ClassVar[str] = "what to import"
    steps: ClassVar[int] = 1

    def print_fatal(self, error: Exception, console: Console) -> None:
        console.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)

    def exit_code(self, report: Any) -> int:
        return 0

    def bundled_present(self, folder: Path) -> bool:
        return folder.is_dir()

    async def plan(self, target: str, report: Any, step: Callable[[str, str], None], imported: Callable[[str], Any]) -> Any:
        raise NotImplementedError
