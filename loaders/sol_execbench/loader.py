"""`kernelindex import sol-execbench`: this source's steps, as loaders/pipeline.py runs them.

Per kernel: fetch and parse its detail, make its OperationSpec, WorkloadCases and WorkloadSuite in
the KernelIndex v1alpha1 format (normalize.format_kernel), fetch every page of submissions (at
most `limit` submissions: later pages are not fetched), parse and fingerprint each record; the
pipeline then builds (normalize.format_submission: the seed system's own manifests and digests)
each record whose current run does not carry its fingerprint, and writes the `FormatBundle`s
through the format's write path (cohorts keyed as the seed keys them). Only passed submissions
make a run in the format (the others are skipped, with the reason). A bad kernel, page or record is rejected with its
reason and the rest goes on. One record group per kernel: its runs share its definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from loaders.common.http import FetchError, SourceUnreachable
from loaders.common.source import (
    Discovery,
    Fetched,
    FormatBundle,
    Option,
    Record,
    RecordGroup,
    Rejected,
    Skipped,
    SourceLoader,
    UnitReader,
)
from loaders.sol_execbench import SOURCE, normalize
from loaders.sol_execbench.discover import discover
from loaders.sol_execbench.fetch import DEFAULT_BASE_URL, fetch_kernel, fetch_submission_pages, open_source
from loaders.sol_execbench.normalize import FormatKernel, format_kernel, format_source_record, format_submission
from loaders.sol_execbench.parse import ParseError, Submission, parse_kernel, parse_submission, record_label
from loaders.sol_execbench.report import ImportReport, KernelPlan, print_report
from registry.digest import sha256_digest


@dataclass(frozen=True)
class _Data:
    submission: Submission
    snapshot_digest: str
    manifests: FormatKernel
    plan: KernelPlan


class _KernelReader(UnitReader):
    def __init__(self, kernel_id: int, report: ImportReport, limit: int | None):
        self.kernel_id, self.report, self.limit = kernel_id, report, limit
        self.subject = f"kernel {kernel_id}"
        self.manifests: FormatKernel | None = None
        self.plan: KernelPlan | None = None
        self.records: list[Record] = []
        self.seen: set[int] = set()

    def _full(self) -> bool:
        return self.limit is not None and self.plan is not None and self.plan.discovered >= self.limit

    async def fetch(self, source: Any):
        try:
            response = await fetch_kernel(source, self.kernel_id)
        except SourceUnreachable:
            raise
        except FetchError as error:
            yield Fetched(self.subject, error.response, error.reason)
            return
        yield Fetched(self.subject, response, data="kernel")
        if self.manifests is None:
            return  # the detail was rejected
        async for fetched in fetch_submission_pages(source, self.kernel_id):
            if self._full():
                break
            yield Fetched(f"{self.subject} submissions offset {fetched.offset}", fetched.response, fetched.error, data=fetched.page)
            if self._full():
                break  # do not fetch pages we will not use

    def parse(self, fetched: Fetched) -> None:
        if fetched.data == "kernel":
            self._parse_kernel(fetched.response.body)
            return
        report, plan = self.report, self.plan
        snapshot_digest = sha256_digest(fetched.response.body)
        for raw in fetched.data.records:
            if self._full():
                break
            label = record_label(raw)
            try:
                submission = parse_submission(raw)
            except ParseError as error:
                report.discovered += 1
                plan.discovered += 1
                report.reject(label, str(error))
                continue
            if submission.id in self.seen:
                continue  # paging shifted under us: the same record twice
            self.seen.add(submission.id)
            report.discovered += 1
            plan.discovered += 1
            data = _Data(submission, snapshot_digest, self.manifests, plan)
            self.records.append(Record(str(submission.id), format_source_record(self.manifests, raw), label, data))

    def _parse_kernel(self, body: bytes) -> None:
        try:
            kernel = parse_kernel(body)
            if kernel.id != self.kernel_id:
                raise normalize.Rejected(f"GET /kernels/{self.kernel_id} answered kernel {kernel.id}")
            manifests = format_kernel(kernel)
        except (ParseError, normalize.Rejected) as error:
            self.report.reject(self.subject, str(error))
            return
        self.manifests = manifests
        self.report.kernels_imported += 1
        self.plan = KernelPlan(self.kernel_id, kernel.name)
        self.report.plan.append(self.plan)

    def groups(self) -> list[RecordGroup]:
        if self.manifests is None:
            return []
        return [RecordGroup(self.manifests.operation_digest, self.records)]


class SolExecBenchLoader(SourceLoader):
    key = SOURCE
    title = "SOL-ExecBench"
    description = "NVIDIA's SOL-ExecBench leaderboard (live API or a saved snapshot)"
    about = (
        "Each kernel of the leaderboard (GET /kernels, /kernels/{id}: its OperationSpec and WorkloadSuite become "
        "a definition and its workloads) and every page of its submissions (GET /submissions?kernel_id=...: each "
        "a run, named by its submission id), from the live API or from a snapshot directory of saved answers. "
        "A record whose fingerprint is stored already is not rebuilt; a bad kernel, page or record is rejected "
        "with its reason and the rest imported."
    )
    examples = (
        ("--kernel 51 --limit 20 --dry-run", "read kernel 51 and its first 20 submissions from the live API; write nothing"),
        ("--snapshot data/snapshots/sol-execbench", "the saved answers `serve` imports (a checkout's data/)"),
        ("", "every kernel and submission of the live API"),
    )
    default_base_url = DEFAULT_BASE_URL
    unit = "kernels"
    record_title = "NVIDIA SOL-ExecBench"
    record_prefix = "submission"
    options = (Option("--kernel", "kernels", "kernel id (repeatable)", type=int),)
    selects = "kernels"
    limit_help = "submissions per kernel"
    fatal = (FetchError, ParseError)

    def open(self, snapshot_dir: Path | None, base_url: str | None):
        return open_source(snapshot_dir=snapshot_dir, base_url=base_url)

    def new_report(self, source: str, dry_run: bool) -> ImportReport:
        return ImportReport(source=source, dry_run=dry_run)

    def print_report(self, report: ImportReport, console: Console) -> None:
        print_report(report, console)

    async def discover(self, source: Any, report: ImportReport, *, kernels: list[int] | None = None) -> Discovery:
        found = await discover(source, kernel_ids=kernels)
        report.kernels_listed = len(found.listed)
        report.kernels_selected = len(found.selected)
        for subject, reason in found.problems:
            report.reject(subject, reason)
        return Discovery(responses=[found.response], units=[summary.id for summary in found.selected])

    def unit_label(self, unit: int) -> str:
        return f"kernel {unit}"

    def reader(self, unit: int, found: Discovery, report: ImportReport, limit: int | None) -> UnitReader:
        return _KernelReader(unit, report, limit)

    def normalize(self, record: Record) -> FormatBundle:
        data: _Data = record.data
        try:
            item = format_submission(data.submission, data.manifests)
        except normalize.Rejected as error:
            raise Rejected(str(error)) from None
        except normalize.Skipped as error:
            raise Skipped(str(error)) from None
        kernel = item.kernel
        return FormatBundle(
            run=item.run,
            operation=kernel.operation,
            workload=kernel.suite,
            implementation=item.implementation,
            protocol=item.protocol,
            environment=item.environment,
            cases=kernel.cases,
            project=item.project,
            source=SOURCE,
            source_record=record.fingerprint,
            source_snapshot=data.snapshot_digest,
            project_name=data.submission.username,
            operation_title=kernel.title,
        )

    def counted(self, report: ImportReport, record: Record) -> None:
        data: _Data = record.data
        data.plan.runs += 1
        data.plan.groups[f"{data.submission.gpu_type} · {data.submission.evaluation_stack_version}"] += 1


LOADER = SolExecBenchLoader()
