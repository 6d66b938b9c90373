"""`kernelindex import kernelindex-catalog FILE|URL`: this source's steps, as loaders/pipeline.py runs them.

A source read whole (`loaders.common.source.WholeSourceLoader`): the export is fetched and checked
against its latest.json, decompressed and parsed, every row's digests verified (fetch → parse →
normalize) and planned (publish.plan_write) before anything is written; the pipeline then writes
the plan with the format's one writer (store.catalog.write_plan), as it writes a per-record
source's `FormatBundle`s. An export refused as a whole raises `CatalogRefused` (one `error:` line
per problem, exit code 2, nothing written); rows refused one by one are in the report (exit 1).
`serve` imports the bundled export (data/kernelindex-catalog/) unless its import record is stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from loaders.common.format_plan import WritePlan
from loaders.common.source import WholeSourceLoader
from loaders.kernelindex_catalog import SOURCE
from loaders.kernelindex_catalog.cli import CatalogReport, print_report
from loaders.kernelindex_catalog.discover import locate
from loaders.kernelindex_catalog.fetch import CatalogRefused, fetch, file_stat
from loaders.kernelindex_catalog.normalize import normalize
from loaders.kernelindex_catalog.parse import parse
from loaders.kernelindex_catalog.publish import plan_write

# Where the bundled export is published (data/kernelindex-catalog/latest.json's "url"): -h's example.
EXPORT_URL = "https://raw.githubusercontent.com/SamMausberg/KernelIndex/main/registry/exports/catalog-2026-08-16-0022af0b.jsonl.zst"


class CatalogLoader(WholeSourceLoader):
    key = SOURCE
    title = "KernelIndex catalog"
    description = "the KernelIndex public catalog export (catalog-*.jsonl.zst with its latest.json; a FILE or URL)"
    unit = "steps"
    record_title = "KernelIndex catalog"
    target_help = "the export (catalog-*.jsonl.zst), its latest.json, or their folder"
    about = (
        "The latest.json beside the export is checked (sha256, size, line count), then every row's digests, "
        "cohort keys, references and v1alpha1 models, before anything is written: a corrupt or truncated file "
        "writes nothing (exit 2); a refused row is reported and the rest imported (exit 1)."
    )
    examples = (
        ("data/kernelindex-catalog/catalog-2026-08-16-0022af0b.jsonl.zst", "the bundled export (a checkout's data/)"),
        (EXPORT_URL + " --dry-run", "the same export from the repository it is published in; check it, write nothing"),
    )
    fatal = (CatalogRefused,)
    bundled = "kernelindex-catalog"
    steps = 5

    def new_report(self, source: str, dry_run: bool) -> CatalogReport:
        return CatalogReport(target=source, dry_run=dry_run)

    def print_report(self, report: CatalogReport, console: Console) -> None:
        print_report(report, console)

    def print_fatal(self, error: Exception, console: Console) -> None:
        for problem in error.problems:
            console.print(f"error: {problem}", markup=False, highlight=False, soft_wrap=True)
        console.print("error: nothing was written", markup=False, highlight=False, soft_wrap=True)

    def exit_code(self, report: CatalogReport) -> int:
        return 1 if report.refused else 0

    def bundled_present(self, folder) -> bool:
        return (folder / "latest.json").is_file()

    async def plan(
        self,
        target: str,
        report: CatalogReport,
        step: Callable[[str, str], None],
        imported: Callable[..., Awaitable[bool]],
    ) -> WritePlan | None:
        location = locate(target)
        stat = file_stat(location)
        if stat is not None and await imported(file_stat=stat):
            # This very file (path, size, mtime, its latest.json's sha256) was imported: nothing
            # is read (serve's restart). Named by its record's digest.
            report.file_name, report.sha256 = Path(stat["path"]).name, stat["pointerSha256"] or ""
            report.skipped_as_imported = True
            return None
        fetched = await fetch(location)
        report.file_name, report.sha256, report.notes = fetched.file_name, fetched.sha256, list(fetched.notes)
        if await imported(sha256=fetched.sha256):
            fetched.discard()
            report.skipped_as_imported = True
            return None
        step("fetch", "decompress")
        try:
            parsed = parse(fetched)
        finally:
            fetched.discard()  # a downloaded export's temporary file: its rows are read
        step("decompress and parse", f"check {len(parsed.lines):,} rows")
        catalog = normalize(fetched.file_name, parsed)
        report.read, report.refused = catalog.read, catalog.refused
        step("check digests and rows", "prepare documents")
        plan = plan_write(catalog, fetched, datetime.now(UTC))
        if stat is not None and stat["pointerSha256"] in (None, fetched.sha256):
            plan.import_record["fileStat"] = stat  # the next start's cheap check (above)
        step("prepare documents", "write" if not report.dry_run else "dry run: nothing written")
        return plan


LOADER = CatalogLoader()
