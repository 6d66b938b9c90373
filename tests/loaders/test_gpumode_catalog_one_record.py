"""One GPU MODE submission imported from the dataset and from the KernelIndex catalog is ONE
record: submission 30771 of amd-fp8-mm, through the real importers (`import gpumode` against a
datasets-server-shaped HTTP server, `import kernelindex-catalog` from an export file) into a real
database (SecantusDB through the driver), read back through GraphQL.

The GPU MODE row is RECONSTRUCTED from the bundled export's facts about the submission
(tests/loaders/gpumode_reconstructed.py); its `code` is a SYNTHETIC text, because the export holds
only the real code's sha256 and length. So the export used here is the bundled one cut to this
submission with ONE DELIBERATE CHANGE: the implementation's `source` facts are those of that text,
and the digests that depend on them are made again (tests/loaders/catalog_exports.py
`one_submission_with_code`). Everything else in both is the export's own: operation, workloads,
protocol, environment, cohort keys."""

from __future__ import annotations

import functools
import io

from rich.console import Console

from loaders import pipeline
from loaders.gpumode.fetch import HttpSource
from loaders.gpumode.loader import GpuModeLoader
from tests.loaders import gpumode_synthetic
from tests.loaders.catalog_exports import one_submission_with_code, write_export
from tests.loaders.datasets_server import DatasetsServer
from tests.loaders.gpumode_reconstructed import reconstructed_flat_row, reconstructed_per_shape_row, runs_of

SUBMISSION = "submission/30771"
BOARD_ID = 399  # a placeholder: the export does not hold the board's KernelBot id
FLAT_SUBMISSION = "submission/555004"  # causal_conv1d (Helion), on runner B200_Nebius
FLAT_BOARD_ID = 598  # a placeholder too
CODE = "# SYNTHETIC stand-in for submission 30771's code (the export holds only its digest)\nimport torch\n"

import_gpumode = functools.partial(pipeline.run_import, "gpumode")
import_catalog = functools.partial(pipeline.run_import, "kernelindex-catalog")


class Counting(GpuModeLoader):
    """The GPU MODE loader, counting the records it is asked to build."""

    built = 0

    def normalize(self, record):
        self.built += 1
        return super().normalize(record)


def quiet() -> Console:
    return Console(file=io.StringIO(), width=240)


def dataset(code: str | None = CODE) -> dict[str, list[dict]]:
    row = reconstructed_per_shape_row(runs_of(SUBMISSION)) | {"leaderboard_id": BOARD_ID, "code": code}
    board = gpumode_synthetic.leaderboard(BOARD_ID, "amd-fp8-mm", ["MI300X"])  # its name is the export's
    return {"leaderboards": [board], gpumode_synthetic.PER_SHAPE_CONFIG: [row]}


def with_flat_board(data: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Beside 30771: a flat submission (hf_export.py's shape, config helion_b200_nebius)."""
    (run,) = runs_of(FLAT_SUBMISSION)
    row = reconstructed_flat_row(run) | {"leaderboard_id": FLAT_BOARD_ID, "code": CODE}
    board = gpumode_synthetic.leaderboard(FLAT_BOARD_ID, "causal_conv1d", ["B200_Nebius"])
    return data | {"leaderboards": [*data["leaderboards"], board], "helion_b200_nebius": [row]}


def both_cut() -> list[dict]:
    flat = [line for line in one_submission_with_code(FLAT_SUBMISSION, CODE) if line["table"] != "sources"]
    return one_submission_with_code(SUBMISSION, CODE) + flat


def source(base_url: str) -> HttpSource:
    return HttpSource(base_url, timeout=5, attempts=3, backoff=0.01, max_wait=1, index_wait=5)


RUNS = """query($after: String) {
  runs(filter: {source: "gpumode-kernelbot"}, first: 50, after: $after) {
    nodes { digest rank sourceNative { externalId benchmark } group { id size } }
  }
}"""


def export_runs(lines: list[dict], external_id: str) -> list[dict]:
    native = (line["row"]["manifest"]["run"]["spec"]["sourceNative"] for line in lines if line["table"] == "benchmark_runs")
    rows = [line["row"] for line in lines if line["table"] == "benchmark_runs"]
    return [row for row, n in zip(rows, native, strict=True) if n["externalId"] == external_id]


async def _one_record(db, api, export_lines, extra: int = 0) -> None:
    """30771's 18 runs are the export's, each stored once, one per cohort (`extra`: other runs)."""
    expected = {row["runDigest"] for row in export_runs(export_lines, SUBMISSION)}
    assert len(expected) == 18
    docs = await db.runs.find({"externalId": SUBMISSION}).to_list()
    assert {d["_id"] for d in docs} == expected  # the catalog's digests, each stored once
    assert all(d["current"] for d in docs) and len({d["groupKey"] for d in docs}) == 18
    assert await db.runs.count_documents({}) == 18 + extra
    assert await db.comparison_groups.count_documents({}) == 18 + extra
    assert all(d.get("sourceRecord") and d.get("provenance") for d in docs)  # both paths hold it
    nodes = [n for n in (await api.data(RUNS))["runs"]["nodes"] if n["sourceNative"]["externalId"] == SUBMISSION]
    assert {n["digest"] for n in nodes} == expected
    assert {n["sourceNative"]["benchmark"] for n in nodes} == {f"amd-fp8-mm/{i}" for i in range(18)}
    assert all(n["group"]["size"] == 1 and n["rank"] == 1 for n in nodes)


async def test_dataset_first_then_the_catalog(db, api, tmp_path):
    lines = both_cut()
    export = write_export(tmp_path / "export", lines)
    with DatasetsServer(with_flat_board(dataset())) as server:
        first = await import_gpumode(db, source=source(server.base_url), console=quiet())
        assert (first.new, first.rejected) == (19, [])
        report = await import_catalog(db, target=str(export), console=quiet())
        assert report.outcome.runs_new == 0 and report.outcome.runs_unchanged == 19
        counting = Counting()
        again = await pipeline.run_import(counting, db, source=source(server.base_url), console=quiet())
        assert (again.new, again.superseded, again.unchanged) == (0, 0, 19)
        assert counting.built == 0  # unchanged by their fingerprints (gpumode-kernelbot), not rebuilt
    await _one_record(db, api, lines, extra=1)
    (flat,) = export_runs(lines, FLAT_SUBMISSION)
    doc = await db.runs.find_one({"externalId": FLAT_SUBMISSION})
    assert doc["_id"] == flat["runDigest"] and doc["groupKey"] == flat["comparisonKey"] and doc["current"]
    assert (await db.comparison_groups.find_one({"_id": flat["comparisonKey"]}))["size"] == 1


async def test_the_catalog_first_then_the_dataset(db, api, tmp_path):
    lines = one_submission_with_code(SUBMISSION, CODE)
    export = write_export(tmp_path / "export", lines)
    report = await import_catalog(db, target=str(export), console=quiet())
    assert report.outcome.runs_new == 18
    with DatasetsServer(dataset()) as server:
        after = await import_gpumode(db, source=source(server.base_url), console=quiet())
    assert (after.new, after.superseded, after.unchanged, after.rejected) == (0, 0, 18, [])
    await _one_record(db, api, lines)


async def test_without_its_code_it_is_still_one_record_in_each_cohort(db, api, tmp_path):
    """The export untouched (the real code's digest), the row without its code (the cell cut by
    the datasets-server, or absent): our runs name an implementation without `source`, so their
    digests differ from the catalog's; they are the same source record (gpumode-kernelbot,
    submission/30771) in the same cohorts, so each cohort still holds one current run of it."""
    lines = one_submission_with_code(SUBMISSION, None)
    export = write_export(tmp_path / "export", lines)
    catalog_digests = {row["row"]["runDigest"] for row in lines if row["table"] == "benchmark_runs"}
    await import_catalog(db, target=str(export), console=quiet())
    with DatasetsServer(dataset(code=None)) as server:
        report = await import_gpumode(db, source=source(server.base_url), console=quiet())
    assert report.rejected == []
    current = await db.runs.find({"externalId": SUBMISSION, "current": True}).to_list()
    assert len(current) == 18 and len({d["groupKey"] for d in current}) == 18
    assert await db.comparison_groups.count_documents({}) == 18
    # Which one is current: the dataset's, a corrected record of the same submission; the
    # catalog's is kept, superseded by it.
    assert {d["_id"] for d in current}.isdisjoint(catalog_digests)
    kept = await db.runs.find({"_id": {"$in": sorted(catalog_digests)}}).to_list()
    assert len(kept) == 18 and not any(d["current"] for d in kept)
    nodes = (await api.data(RUNS))["runs"]["nodes"]
    assert len(nodes) == 18 and all(n["group"]["size"] == 1 for n in nodes)
    # and the export again writes nothing: its runs are that record, reconciled
    again = await import_catalog(db, target=str(export), console=quiet())
    assert again.outcome.runs_new == 0 and await db.runs.count_documents({"current": True}) == 18
