"""`kernelindex import gpumode`: this source's steps, as loaders/pipeline.py runs them.

Every config is read page by page (through `/filter` when the server refuses its `/rows`, at
most `limit` rows per config); each row is parsed and, when KernelBot would rank it, kept as a
candidate. A config is taken whole or not at all: a page that cannot be had, a partial `/filter`
index or a short count drops the config's candidates (nothing half-imported); its rows' own
rejections and skips are reported once it is read whole. After the last config (`finish`) each
board's score rule is decided (per-shape: the rule its rows' `run_score` follow) and the best
candidate per (board, user, environment) under it becomes a record, one record group per board
(its runs share the board's definition); the pipeline builds those whose current run does not
carry their fingerprint. A malformed row is rejected (naming the row and field); a row KernelBot
would not rank is skipped with the reason.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from loaders.common.http import FetchError
from loaders.common.source import (
    Discovery,
    Fetched,
    FormatBundle,
    Option,
    Record,
    RecordGroup,
    Rejected,
    RunManifests,
    SourceLoader,
    UnitReader,
)
from loaders.gpumode import DATASET, SOURCE, catalog_identity, normalize
from loaders.gpumode.discover import discover
from loaders.gpumode.fetch import DEFAULT_BASE_URL, FILTER, HttpSource, fetch_pages, open_source
from loaders.gpumode.normalize import (
    FLAT,
    PER_SHAPE,
    RULES,
    Board,
    Candidate,
    candidate_for,
    definition_for,
    external_id_of,
    record_fingerprint,
    run_for,
)
from loaders.gpumode.parse import ParseError, PerShapeRow, parse_submission, row_label
from loaders.gpumode.report import ImportReport, print_report
from registry.digest import sha256_digest

Key = tuple[str, str, str]


def seconds(text: str) -> float:
    """`--index-wait`: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be 0 seconds or more")
    return value


class Pool:
    """Candidates of the configs read whole: per (board, user, environment), the best under each
    score rule its rows are consistent with; per board, how many rows follow each rule. The
    board's rule and each key's best are decided once every config is in (`decide`)."""

    def __init__(self) -> None:
        self.best: dict[str, dict[Key, Candidate]] = defaultdict(dict)  # rule → key → best
        self.keys: dict[Key, Board] = {}
        self.votes: dict[Board, Counter] = defaultdict(Counter)  # rows of a board told apart by their rule
        self.partial: list[tuple[str, Board, frozenset[str]]] = []  # rows following only some rules
        self.candidates = 0
        self.beaten = 0

    def add(self, config_candidates: list[tuple[str, Candidate]]) -> None:
        for label, candidate in config_candidates:
            self.candidates += 1
            rules = frozenset(candidate.values)
            if candidate.per_shape and len(candidate.cases) > 1:
                self.votes[candidate.board].update(rules)
                if len(rules) < 2:
                    self.partial.append((label, candidate.board, rules))
            if candidate.key in self.keys:
                self.beaten += 1
            self.keys[candidate.key] = candidate.board
            for rule in rules:
                held = self.best[rule].get(candidate.key)
                if held is None or candidate.order(rule) < held.order(rule):
                    self.best[rule][candidate.key] = candidate

    def rule_of(self, board: Board, kind: str) -> str:
        if kind == FLAT:
            return "score"
        votes = self.votes.get(board)
        if not votes:
            return RULES["last"]  # every run has one case: all rules agree; KernelBot's default (task.py)
        # geomean first on equal votes: no row told the two apart, and their values agree within tolerance
        return max((RULES["geom"], RULES["mean"]), key=lambda rule: votes[rule])

    def decide(self, report: ImportReport) -> list[Candidate]:
        rules: dict[Board, str] = {}
        for board in self.keys.values():
            if board not in rules:
                plan = report.board(board.name)
                rules[board] = plan.rule = self.rule_of(board, plan.kind)
        for label, board, followed in self.partial:
            if rules[board] not in followed:
                report.reject(label, f"run_score: follows {', '.join(sorted(followed))}, not the board's rule {rules[board]}")
        chosen = []
        for key, board in self.keys.items():
            rule = rules[board]
            candidate = self.best[rule].get(key)
            if candidate is None:
                continue  # the key's only rows did not follow the board's rule (rejected above)
            candidate.rule = rule if candidate.per_shape else None
            chosen.append(candidate)
        report.candidates, report.not_best = self.candidates, self.beaten
        return chosen


class CatalogSubmission:
    """A chosen submission of a board the KernelIndex catalog curates: its runs with the catalog's
    identity (catalog_identity.py), built once for all its records (one per case, per-shape)."""

    def __init__(self, candidate: Candidate, problem: catalog_identity.Problem):
        self.candidate, self.problem = candidate, problem
        self._runs: list[catalog_identity.CatalogRun] | None = None

    def runs(self) -> list[catalog_identity.CatalogRun]:
        if self._runs is None:
            submission = self.candidate.submission
            if isinstance(submission, PerShapeRow):
                self._runs = catalog_identity.per_shape_runs(submission, self.problem)
            else:
                self._runs = [catalog_identity.flat_run(submission, self.problem)]
        return self._runs

    def case_count(self) -> int:
        return len(self.candidate.cases) if self.candidate.per_shape else 1


@dataclass(frozen=True)
class CatalogRecord:
    submission: CatalogSubmission
    index: int  # which of the submission's runs (its case, per-shape)


def catalog_records(candidate: Candidate, fingerprint: str, label: str) -> list[Record] | None:
    """The records of a chosen submission under the catalog's identity, or None when the catalog
    does not curate its board (then it keeps our own manifests: normalize.run_for). A per-shape
    submission is one record per case (the catalog's runs: one per case, sharing the source record
    `submission/{id}`, each in its own cohort); a flat one is one record."""
    problem = catalog_identity.problem_for(candidate.board.name)
    if problem is None:
        return None
    held = CatalogSubmission(candidate, problem)
    external_id = f"submission/{candidate.submission.submission_id}"
    count = held.case_count()
    return [
        Record(external_id, fingerprint, f"{label} case {i}" if candidate.per_shape else label, CatalogRecord(held, i))
        for i in range(count)
    ]


_stderr: Console | None = None


def _waiting(report: ImportReport, budget: float):
    """What a config's wait for the /filter index says: a line on stderr now, and in the report."""

    def told(config: str, elapsed: float, wait: float, reason: str) -> None:
        global _stderr
        line = f"waiting for the datasets-server to index {config}: {elapsed:.0f} s of {budget:g} s, next try in {wait:.0f} s ({reason})"
        report.index_waits.append(line)
        _stderr = _stderr or Console(stderr=True)
        _stderr.print(line, markup=False, highlight=False, soft_wrap=True)

    return told


class _ConfigReader(UnitReader):
    """One config, whole or not at all: its rows' candidates, rejections and skips are held until
    the config is read to its end (`done`)."""

    def __init__(self, config: str, found: Discovery, report: ImportReport, limit: int | None):
        self.config, self.found, self.report, self.limit = config, found, report, limit
        self.read = 0
        self.seen: set[int] = set()
        self.total: int | None = None
        self.failed = False
        self.kept: list[tuple[str, Candidate]] = []
        self.rejected: list[tuple[str, str]] = []
        self.skipped: list[tuple[str, str]] = []

    def _full(self) -> bool:
        return self.limit is not None and self.read >= self.limit

    async def fetch(self, source: Any):
        on_wait = _waiting(self.report, source.index_wait) if isinstance(source, HttpSource) else None
        async for fetched in fetch_pages(source, self.config, on_wait=on_wait):
            if fetched.error is not None:
                self.failed = True
                reason = f"not imported: the page at offset {fetched.offset} could not be read: {fetched.error}"
                yield Fetched(self.config, fetched.response, reason)
                return  # the config is lost: reading on would import nothing of it
            if fetched.endpoint == FILTER and fetched.page is not None:
                if self.config not in self.report.configs_by_filter:
                    self.report.configs_by_filter.append(self.config)
                if fetched.page.partial:
                    self.failed = True
                    reason = "not imported: /filter answered `partial: true` (the server indexed only part of the config)"
                    yield Fetched(self.config, fetched.response, reason)
                    return
            yield Fetched(f"{self.config} offset {fetched.offset}", fetched.response, None, data=fetched.page)
            if self._full():
                return

    def parse(self, fetched: Fetched) -> None:
        if fetched.data is None:
            return  # /rows refused the config (too big): the answer is kept, the config read through /filter
        boards = self.found.data["discovery"]
        self.total = fetched.data.total
        snapshot_digest = sha256_digest(fetched.response.body)
        for row in fetched.data.rows:
            if self._full():
                return
            if row.index in self.seen:
                continue  # a page that overlaps the one before
            self.seen.add(row.index)
            self.read += 1
            label = f"{self.config} {row_label(row)}"
            try:
                submission = parse_submission(row)
            except ParseError as error:
                self.report.discovered += 1
                self.rejected.append((label, str(error)))
                continue
            if isinstance(submission, PerShapeRow):
                board = boards.board_by_id(submission.leaderboard_id)
            elif submission.leaderboard_id is not None:
                board = boards.board_by_id(submission.leaderboard_id, submission.problem_name)
            else:
                board = boards.board_by_name(submission.problem_name)
            if not boards.wanted(board):
                continue
            self.report.discovered += 1
            plan = self.report.board(board.name)
            plan.kind, plan.listed = (PER_SHAPE if isinstance(submission, PerShapeRow) else FLAT), board.listed
            plan.rows += 1
            try:
                candidate = candidate_for(submission, board, config=self.config, snapshot_digest=snapshot_digest, row=row.data)
            except normalize.Rejected as error:
                self.rejected.append((label, str(error)))
                continue
            except normalize.Skipped as error:
                self.skipped.append((label, str(error)))
                continue
            self.kept.append((label, candidate))

    def done(self) -> None:
        if self.failed:
            return
        if self.limit is None and self.total is not None and len(self.seen) != self.total:
            self.report.reject(self.config, f"not imported: {len(self.seen)} distinct rows read of the {self.total} the server counts")
            return
        for label, reason in self.rejected:
            self.report.reject(label, reason)
        for label, reason in self.skipped:
            self.report.skip(label, reason)
        self.found.data["pool"].add(self.kept)
        self.report.configs_read += 1


class GpuModeLoader(SourceLoader):
    key = SOURCE
    title = "GPU MODE"
    description = "GPU MODE's KernelBot competition results (Hugging Face datasets-server or a saved snapshot)"
    about = (
        f"The Hugging Face dataset {DATASET} (KernelBot's submissions, by leaderboard) through the datasets-server "
        "API (GET /splits, then every page of each config by /rows, or /filter where /rows is refused), or a "
        "snapshot directory of saved answers. Each user's best rankable submission per board and GPU becomes a "
        "run, one record group per board; a config is imported whole or not at all; rows KernelBot would not "
        "rank are skipped with the reason."
    )
    examples = (
        ("--limit 100 --dry-run", "every board, at most 100 rows per config, from the live datasets-server; write nothing"),
        ("--leaderboard NAME --index-wait 120", "one board (repeat --leaderboard for more); give a config up after 2 minutes not ready"),
        ("--snapshot DIR", "saved answers (tests/fixtures/gpumode-synthetic/ is a synthetic one)"),
    )
    default_base_url = DEFAULT_BASE_URL
    unit = "configs"
    record_title = "GPU MODE KernelBot"
    record_prefix = "leaderboard"  # leaderboard/{board}/{user}/{runner or GPU}
    options = (
        Option("--leaderboard", "leaderboards", "board name (repeatable)", metavar="NAME"),
        Option(
            "--index-wait",
            "index_wait",
            "seconds a config's /filter may answer 'not ready' while the server indexes it (default 600)",
            type=seconds,
            repeat=False,
            metavar="SECONDS",
        ),
    )
    selects = "boards"
    run_sources = (catalog_identity.SOURCE,)  # the boards the catalog curates (catalog_identity.py)
    limit_help = "rows per config"
    fatal = (FetchError, ParseError)

    def open(self, snapshot_dir: Path | None, base_url: str | None):
        return open_source(snapshot_dir=snapshot_dir, base_url=base_url)

    def new_report(self, source: str, dry_run: bool) -> ImportReport:
        return ImportReport(source=source, dry_run=dry_run)

    def print_report(self, report: ImportReport, console: Console) -> None:
        print_report(report, console)

    async def discover(
        self, source: Any, report: ImportReport, *, leaderboards: list[str] | None = None, index_wait: float | None = None
    ) -> Discovery:
        if index_wait is not None and isinstance(source, HttpSource):
            source.index_wait = index_wait
        found = await discover(source, leaderboards=leaderboards)
        report.configs_listed, report.boards_listed = found.configs_listed, len(found.boards)
        for subject, reason in found.problems:
            report.reject(subject, reason)
        for subject, what in found.notices:
            report.notice(subject, what)
        return Discovery(responses=list(found.responses), units=list(found.configs), data={"discovery": found, "pool": Pool()})

    def reader(self, unit: str, found: Discovery, report: ImportReport, limit: int | None) -> UnitReader:
        return _ConfigReader(unit, found, report, limit)

    def finish(self, found: Discovery, report: ImportReport) -> list[RecordGroup]:
        """Each board's rule decided; one group per board, its users' best candidates in key order."""
        pool: Pool = found.data["pool"]
        groups: dict[Any, RecordGroup] = defaultdict(lambda: RecordGroup(None))
        for candidate in sorted(pool.decide(report), key=lambda c: c.key):
            group = groups[candidate.board]
            label = f"{candidate.config} submission {candidate.submission.submission_id}"
            fingerprint = record_fingerprint(candidate)
            records = catalog_records(candidate, fingerprint, label)
            if group.definition_digest is None:
                curated = catalog_identity.problem_for(candidate.board.name)
                group.definition_digest = curated.operation_digest if curated else definition_for(candidate.board)[1]
                group.source = catalog_identity.SOURCE if curated else None
            if records is not None:
                group.records.extend(records)
            else:
                group.records.append(Record(external_id_of(candidate), fingerprint, label, candidate))
        return list(groups.values())

    def normalize(self, record: Record) -> FormatBundle | RunManifests:
        if isinstance(record.data, CatalogRecord):
            return self.catalog_bundle(record)
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

    def catalog_bundle(self, record: Record) -> FormatBundle:
        held: CatalogSubmission = record.data.submission
        try:
            runs = held.runs()
        except normalize.Rejected as error:
            raise Rejected(str(error)) from None
        if record.data.index >= len(runs):
            raise Rejected(f"run_result: no case {record.data.index}")
        built = runs[record.data.index]
        return FormatBundle(
            run=built.run,
            operation=built.operation,
            workload=built.workload,
            implementation=built.implementation,
            protocol=built.protocol,
            environment=built.environment,
            project=built.project,
            source=catalog_identity.SOURCE,
            source_record=record.fingerprint,
            source_snapshot=held.candidate.snapshot_digest,
            project_name=built.project.spec.name,
        )

    def counted(self, report: ImportReport, record: Record) -> None:
        candidate = record.data.submission.candidate if isinstance(record.data, CatalogRecord) else record.data
        report.board(candidate.board.name).runs[candidate.environment.label] += 1

    def progress_runs(self, report: ImportReport) -> int:
        return report.parsed or len(report.boards)


LOADER = GpuModeLoader()
