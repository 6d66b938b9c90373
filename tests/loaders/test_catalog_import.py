"""`kernelindex import kernelindex-catalog`: the bundled export verified row by row, imported,
re-imported without a write, and refused whole when it is corrupt, truncated, mismatched or names
an unknown table (nothing written)."""

from __future__ import annotations

import copy
import functools
import io
import json
import os
from collections import Counter

import pytest
import zstandard
from rich.console import Console

from loaders import pipeline
from loaders.kernelindex_catalog.discover import locate
from loaders.kernelindex_catalog.fetch import CatalogRefused, fetch
from loaders.kernelindex_catalog.normalize import normalize
from loaders.kernelindex_catalog.parse import parse
from registry.comparison import cohort_of
from registry.digest import digest_of
from registry.digest_check import identity
from tests.command import kernelindex
from tests.loaders.catalog_exports import BUNDLED, BUNDLED_DIR, bundled_lines, subset, write_export

# the catalog export is a registered source read whole (loaders/kernelindex_catalog/loader.py)
run_import = functools.partial(pipeline.run_import, "kernelindex-catalog")


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_every_digest_and_cohort_key_of_the_bundled_export_is_ours():
    """RFC 8785 over {apiVersion, kind, spec} (registry/digest.py) gives every digest the export
    states: operations, workloads, implementations, and each run with its protocol and environment;
    registry/comparison.py gives every run's comparison, protocol, environment and correctness key."""
    counts = Counter()
    workloads = {item["row"]["id"]: item["row"] for item in bundled_lines() if item["table"] == "workloads"}
    for item in bundled_lines():
        table, row = item["table"], item["row"]
        if table == "operations":
            assert digest_of(identity(row["manifest"])) == row["semanticDigest"], row["slug"]
        elif table == "workloads":
            assert digest_of(identity(row["manifest"])) == row["workloadDigest"], row["id"]
        elif table == "implementations":
            assert digest_of(identity(row["manifest"])) == row["implementationDigest"], row["slug"]
        elif table == "benchmark_runs":
            manifests, spec = row["manifest"], row["manifest"]["run"]["spec"]
            assert digest_of(identity(manifests["run"])) == row["runDigest"], row["id"]
            assert digest_of(identity(manifests["protocol"])) == spec["protocolDigest"]
            assert digest_of(identity(manifests["environment"])) == spec["environmentDigest"]
            cohort = cohort_of(run_spec=spec, workload_spec=workloads[row["workloadId"]]["manifest"]["spec"])
            keys = (cohort.comparisonKey, cohort.protocolKey, cohort.environmentKey, cohort.correctnessKey)
            assert keys == (row["comparisonKey"], row["protocolKey"], row["environmentKey"], row["correctnessKey"]), row["id"]
            counts[spec["sourceNative"]["source"]] += 1
        counts[table] += 1
    assert counts["operations"] == 449 and counts["workloads"] == 5627 and counts["implementations"] == 4250
    assert counts["benchmark_runs"] == 7857 and counts["record_events"] == 2948 and counts["serving_runs"] == 722
    assert (counts["sol-execbench"], counts["gpumode-kernelbot"], counts["flashinfer-bench"]) == (705, 5215, 1937)


async def test_the_bundled_export_passes_every_check():
    fetched = await fetch(locate(str(BUNDLED)))
    assert fetched.pointer is not None and fetched.pointer.lines == 40795  # latest.json beside it was applied
    catalog = normalize(fetched.file_name, parse(fetched))
    assert catalog.refused == []
    runs = catalog.table("benchmark_runs")
    assert len(runs) == 7857 and len({r["comparisonKey"] for r in runs.values()}) == 1912


async def test_import_then_reimport_writes_nothing(db):
    report = await run_import(db, target=str(BUNDLED), console=quiet())
    out = report.outcome
    assert out.runs_new == 7857 and out.new["definitions"] == 449 and out.new["workloads"] == 5627
    assert out.new["implementations"] == 4250 and out.new["projects"] == 615 and out.history_new == 2948
    assert await db.runs.count_documents({"current": True}) == 7857
    assert await db.comparison_groups.count_documents({}) == 1912
    assert await db.record_history.count_documents({}) == 2948
    cohort = await db.comparison_groups.find_one({"_id": (await db.runs.find_one({"externalId": "32664"}))["groupKey"]})
    members = await db.runs.find({"groupKey": cohort["_id"]}, {"externalId": 1, "rank": 1}).to_list()
    assert {"32664", "32555", "33003"} <= {m["externalId"] for m in members} and cohort["size"] == len(members)
    assert sorted(m["rank"] for m in members if m["rank"] is not None)[0] == 1
    run = await db.runs.find_one({"source": "gpumode-kernelbot"})
    assert run["provenance"][0]["export"]["sha256"] == report.sha256 and run["provenance"][0]["sources"] == ["gpumode-kernelbot"]
    record = await db.catalog_imports.find_one({"_id": report.sha256})
    gpumode = next(s for s in record["sources"] if s["slug"] == "gpumode-kernelbot")
    assert gpumode["attribution"] == "GPU Mode and the KernelBot dataset"

    events = await db.events.count_documents({})
    counts = {name: await db[name].count_documents({}) for name in await db.list_collection_names()}
    again = await run_import(db, target=str(BUNDLED), console=quiet())
    assert again.outcome.runs_new == 0 and again.outcome.runs_unchanged == 7857 and again.outcome.provenance_added == 0
    assert sum(again.outcome.new.values()) == 0 and again.outcome.history_new == 0
    assert await db.events.count_documents({}) == events
    assert {name: await db[name].count_documents({}) for name in await db.list_collection_names()} == counts


async def _nothing_written(db) -> None:
    for name in ("runs", "definitions", "workloads", "implementations", "events", "comparison_groups", "catalog_imports"):
        assert await db[name].count_documents({}) == 0, name


def _cli(target, db, mongo_uri):
    return kernelindex(
        "import", "kernelindex-catalog", str(target), env={"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name, "COLUMNS": "200"}
    )


async def test_a_truncated_export_is_refused_with_nothing_written(db, mongo_uri, tmp_path):
    lines = subset("051")
    half = lambda body: body[: len(body) // 2]  # noqa: E731
    with_pointer = write_export(tmp_path / "a", lines, mangle=half)
    result = _cli(with_pointer, db, mongo_uri)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "latest.json says" in result.stderr and "truncated or replaced" in result.stderr
    without_pointer = write_export(tmp_path / "b", lines, pointer=False, mangle=half)
    result = _cli(without_pointer, db, mongo_uri)
    assert result.returncode == 2 and "truncated: the zstd frame ends early" in result.stderr, result.stderr
    assert "error: nothing was written" in result.stderr
    await _nothing_written(db)


async def test_a_corrupt_export_is_refused(db, mongo_uri, tmp_path):
    def flip(body: bytes) -> bytes:
        middle = len(body) // 2
        return body[:middle] + bytes(b ^ 0xFF for b in body[middle : middle + 64]) + body[middle + 64 :]

    corrupt = write_export(tmp_path / "c", subset("051"), pointer=False, mangle=flip)
    result = _cli(corrupt, db, mongo_uri)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "error: " + corrupt.name + ": not a valid zstd stream" in result.stderr, result.stderr
    not_zstd = tmp_path / "d" / "catalog-x.jsonl.zst"
    not_zstd.parent.mkdir()
    not_zstd.write_bytes(b'{"table": "sources"}\n')
    result = _cli(not_zstd, db, mongo_uri)
    assert result.returncode == 2 and "not a valid zstd stream" in result.stderr
    await _nothing_written(db)


async def test_a_digest_mismatch_and_an_unknown_table_each_get_an_error_line(db, mongo_uri, tmp_path):
    lines = copy.deepcopy(subset("051"))
    runs = [item for item in lines if item["table"] == "benchmark_runs"]
    runs[0]["row"]["manifest"]["run"]["spec"]["observedAt"] = "2020-01-01T00:00:00.000Z"  # its runDigest no longer matches
    workload = next(item for item in lines if item["table"] == "workloads")
    workload["row"]["manifest"]["spec"]["axes"] = {"batch_size": 1}
    lines.append({"table": "gpu_prices", "row": {"id": "x"}})
    result = _cli(write_export(tmp_path / "e", lines), db, mongo_uri)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert any("manifest.run: digest mismatch" in e and "(benchmark_runs)" in e for e in errors), errors
    assert any("(workloads): manifest: digest mismatch" in e for e in errors), errors
    assert any("unknown table 'gpu_prices'" in e for e in errors), errors
    assert errors[-1] == "error: nothing was written"
    await _nothing_written(db)


async def test_rows_that_name_missing_rows_are_refused_and_the_rest_imported(db, mongo_uri, tmp_path):
    lines = copy.deepcopy(subset("051"))
    lines.append(
        {
            "table": "measurements",
            "row": {"id": "m-1", "runId": "no-such-run", "metric": "latency", "statistic": "mean", "unit": "ns", "value": 1},
        }
    )
    result = _cli(write_export(tmp_path / "f", lines), db, mongo_uri)
    assert result.returncode == 1, result.stderr
    assert "runId 'no-such-run': that benchmark_runs row is not in the export" in result.stderr
    assert await db.runs.count_documents({}) == 6


async def test_one_source_record_in_a_cohort_is_one_run(db, tmp_path):
    """A second export holding another run of the same submission in the same cohort (its digest
    differs) is reconciled with the run already held: not written, named in the report."""
    lines = subset("051")
    first = write_export(tmp_path / "one", lines)
    await run_import(db, target=str(first), console=quiet())
    changed = copy.deepcopy(lines)
    run = next(
        item["row"]
        for item in changed
        if item["table"] == "benchmark_runs" and item["row"]["manifest"]["run"]["spec"]["sourceNative"]["externalId"] == "32664"
    )
    run["manifest"]["run"]["spec"]["observedAt"] = "2026-08-14T00:00:00.000Z"
    run["runDigest"] = digest_of(identity(run["manifest"]["run"]))
    second = write_export(tmp_path / "two", changed)
    report = await run_import(db, target=str(second), console=quiet())
    assert [(s, e) for s, e, _, _ in report.outcome.reconciled] == [("sol-execbench", "32664")]
    assert await db.runs.count_documents({"source": "sol-execbench", "externalId": "32664"}) == 1
    assert report.outcome.runs_new == 0


@pytest.mark.parametrize("field", ["sha256", "lines"])
async def test_latest_json_must_agree(db, tmp_path, field):
    target = write_export(tmp_path / "g", subset("051"))
    pointer = json.loads((target.parent / "latest.json").read_text())
    pointer[field] = "0" * 64 if field == "sha256" else pointer[field] + 1
    (target.parent / "latest.json").write_text(json.dumps(pointer))
    with pytest.raises(CatalogRefused) as refused:
        await run_import(db, target=str(target), console=quiet())
    assert len(refused.value.problems) == 1 and (
        "sha256" in refused.value.problems[0] or "lines, latest.json says" in refused.value.problems[0]
    )
    await _nothing_written(db)


def test_the_bundled_pointer_names_the_bundled_export():
    pointer = json.loads((BUNDLED_DIR / "latest.json").read_text())
    assert pointer["file"] == BUNDLED.name and pointer["sizeBytes"] == BUNDLED.stat().st_size
    assert len(zstandard.ZstdDecompressor().decompress(BUNDLED.read_bytes()).splitlines()) == pointer["lines"]


async def test_a_restart_skips_the_imported_file_without_reading_it(db, tmp_path):
    """`serve`'s start (skip_if_imported) finds this very file in the import record by its path,
    size, mtime and its latest.json's sha256, and reads nothing of it; a file whose mtime changed
    is read and checked again."""
    target = write_export(tmp_path / "r", subset("051"))
    first = await run_import(db, target=str(target.parent), console=quiet(), skip_if_imported=True)
    assert not first.skipped_as_imported and first.outcome.runs_new > 0
    record = await db.catalog_imports.find_one({"_id": first.sha256})
    assert record["fileStat"]["path"] == str(target.resolve()) and record["fileStat"]["pointerSha256"] == first.sha256

    # The same bytes count, the same mtime, other content: skipped unread (a read would refuse it).
    stat = target.stat()
    target.write_bytes(b"\0" * stat.st_size)
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = await run_import(db, target=str(target.parent), console=quiet(), skip_if_imported=True)
    assert again.skipped_as_imported and again.outcome is None and again.sha256 == first.sha256

    # Touched: the stat no longer matches, so the file is read, hashed and refused.
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(CatalogRefused):
        await run_import(db, target=str(target.parent), console=quiet(), skip_if_imported=True)
