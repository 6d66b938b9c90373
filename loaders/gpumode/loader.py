"""`kernelindex import gpumode`: this source's steps, as loaders/pipeline.py runs them.

Every config is read page by page (at most `limit` rows per config); each row is parsed and,
when it is a passing leaderboard submission of a selected board, kept as a candidate. After the
last config the best candidate per (board, user, GPU) becomes a record (`finish`), one record
group per board (its runs share the board's definition); the pipeline builds those whose
current run does not carry their fingerprint. A bad page or row is reported and the rest goes on.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console

from loaders.common.http import FetchError
from loaders.common.source import Discovery, Fetched, Option, Record, RecordGroup, Rejected, RunManifests, SourceLoader, UnitReader
from loaders.gpumode import SOURCE, normalize
from loaders.gpumode.discover import discover
from loaders.gpumode.fetch import fetch_pages, open_source
from loaders.gpumode.normalize import FLAT, PER_SHAPE, Candidate, candidate_for, definition_for, external_id_of, record_fingerprint, run_for
from loaders.gpumode.parse import ParseError, PerShapeRow, parse_submission, row_label
from loaders.gpumode.report import ImportReport, print_report
from registry.digest import sha256_digest


class _Best:
    """The best candidate per (board, user, GPU) over every config read."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str, str], Candidate] = {}


class _ConfigReader(UnitReader):
    def __init__(self, config: str, found: Discovery, report: ImportReport, limit: int | None):
        self.config, self.found, self.report, self.limit = config, found, report, limit
        self.read = 0

    def _full(self) -> bool:
        return self.limit is not None and self.read >= self.limit

    async def fetch(self, source: Any):
        async for fetched in fetch_pages(source, self.config):
            yield Fetched(f"{self.config} offset {fetched.offset}", fetched.response, fetched.error, data=fetched.page)
            if self._full():
                return

    def parse(self, fetched: Fetched) -> None:
        report, boards = self.report, self.found.data["discovery"]
        best: _Best = self.found.data["best"]
        snapshot_digest = sha256_digest(fetched.response.body)
        for row in fetched.data.rows:
            if self._full():
                return
            self.read += 1
            label = f"{self.config} {row_label(row)}"
            try:
                submission = parse_submission(row)
            except ParseError as error:
                report.discovered += 1
                report.reject(label, str(error))
                continue
            per_shape = isinstance(submission, PerShapeRow)
            board = boards.board_by_id(submission.leaderboard_id) if per_shape else boards.board_by_name(submission.problem_name)
            if not boards.wanted(board):
                continue
            report.discovered += 1
            plan = report.board(board.name)
            plan.kind, plan.listed = (PER_SHAPE if per_shape else FLAT), board.listed
            plan.rows += 1
            try:
                candidate = candidate_for(submission, board, config=self.config, snapshot_digest=snapshot_digest, row=row.data)
            except normalize.Rejected as error:
                report.reject(label, str(error))
                continue
            except normalize.Skipped as error:
                report.skip(label, str(error))
                continue
            report.candidates += 1
            held = best.by_key.get(candidate.key)
            if held is None or candidate.order() < held.order():
                best.by_key[candidate.key] = candidate
            if held is not None:
                report.not_best += 1

    def done(self) -> None:
        self.report.configs_read += 1


class GpuModeLoader(SourceLoader):
    key = SOURCE
    title = "GPU MODE"
    description = "GPU MODE's KernelBot competition results (Hugging Face datasets-server or a saved snapshot)"
    unit = "configs"
    record_title = "GPU MODE KernelBot"
    record_prefix = "leaderboard"  # leaderboard/{board}/{user}/{gpu}
    options = (Option("--leaderboard", "leaderboards", "board name (repeatable)", metavar="NAME"),)
    selects = "boards"
    limit_help = "rows per config"
    fatal = (FetchError, ParseError)

    def open(self, snapshot_dir: Path | None, base_url: str | None):
        return open_source(snapshot_dir=snapshot_dir, base_url=base_url)

    def new_report(self, source: str, dry_run: bool) -> ImportReport:
        return ImportReport(source=source, dry_run=dry_run)

    def print_report(self, report: ImportReport, console: Console) -> None:
        print_report(report, console)

    async def discover(self, source: Any, report: ImportReport, *, leaderboards: list[str] | None = None) -> Discovery:
        found = await discover(source, leaderboards=leaderboards)
        report.configs_listed, report.boards_listed = found.configs_listed, len(found.boards)
        for subject, reason in found.problems:
            report.reject(subject, reason)
        return Discovery(responses=list(found.responses), units=list(found.configs), data={"discovery": found, "best": _Best()})

    def reader(self, unit: str, found: Discovery, report: ImportReport, limit: int | None) -> UnitReader:
        return _ConfigReader(unit, found, report, limit)

    def finish(self, found: Discovery, report: ImportReport) -> list[RecordGroup]:
        """One group per board, its users' best candidates in key order."""
        best: _Best = found.data["best"]
        groups: dict[Any, RecordGroup] = defaultdict(lambda: RecordGroup(None))
        for candidate in sorted(best.by_key.values(), key=lambda c: c.key):
            group = groups[candidate.board]
            if group.definition_digest is None:
                group.definition_digest = definition_for(candidate.board)[1]
            label = f"submission {candidate.submission.submission_id}"
            group.records.append(Record(external_id_of(candidate), record_fingerprint(candidate), label, candidate))
        return list(groups.values())

    def normalize(self, record: Record) -> RunManifests:
        try:
            item = run_for(record.data, record.fingerprint)
        except normalize.Rejected as error:
            raise Rejected(str(error)) from None
        return RunManifests(
            run=item.run,
            definition=item.definition,
            workload=item.workload,
            protocol=item.protocol,
            environment=item.environment,
            implementation=item.implementation,
            source_record=item.source_record,
        )

    def counted(self, report: ImportReport, record: Record) -> None:
        report.board(record.data.board.name).runs[record.data.product] += 1

    def progress_runs(self, report: ImportReport) -> int:
        return report.parsed or report.candidates - report.not_best


LOADER = GpuModeLoader()
