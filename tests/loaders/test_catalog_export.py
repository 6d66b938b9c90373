"""`kernelindex export --catalog`: our registry in the catalog format, read back by
`import kernelindex-catalog` into an empty database with the same digests, cohorts and ranks."""

from __future__ import annotations

import functools
import io
import json

from rich.console import Console

from loaders import pipeline
from tests.command import kernelindex
from tests.loaders.catalog_exports import subset, write_export

# the catalog export is a registered source read whole (loaders/kernelindex_catalog/loader.py)
run_import = functools.partial(pipeline.run_import, "kernelindex-catalog")


async def _state(db) -> dict:
    runs = {d["_id"]: (d["groupKey"], d["rank"], d["status"]) async for d in db.runs.find({"current": True})}
    groups = {d["_id"]: (d["size"], d["rankedSize"], d["leaderDigest"]) async for d in db.comparison_groups.find({})}
    objects = {
        name: sorted(await db[name].distinct("_id"))
        for name in ("definitions", "workloads", "implementations", "protocols", "environments", "projects")
    }
    history = sorted([(d["comparisonKey"], d["runDigest"], d["cause"]) async for d in db.record_history.find({})])
    return {"runs": runs, "groups": groups, "objects": objects, "history": history}


async def test_export_then_import_into_an_empty_database_is_the_same_registry(db, mongo_client, mongo_uri, tmp_path):
    lines = (
        subset("051") + subset("gpumode-gated-deltanet-chunk-fwd-o")[4:] + subset("gemm-fp4-fp8-n2048-k2048")[4:]
    )  # SOL, GPU MODE, FlashInfer (one copy of the sources)
    source = write_export(tmp_path / "in", lines)
    await run_import(db, target=str(source), console=Console(file=io.StringIO()))
    before = await _state(db)
    assert len(before["runs"]) > 6 and len(before["groups"]) > 2 and before["history"]

    out = tmp_path / "out" / "catalog-ours.jsonl.zst"
    result = kernelindex("export", "--catalog", str(out), env={"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name})
    assert result.returncode == 0, result.stderr
    pointer = json.loads((out.parent / "latest.json").read_text())
    assert pointer["file"] == out.name and pointer["sizeBytes"] == out.stat().st_size and pointer["lines"] > len(before["runs"])

    empty = mongo_client[db.name + "_roundtrip"]
    try:
        from store.schema import ensure_schema

        await ensure_schema(empty)
        report = await run_import(empty, target=str(out), console=Console(file=io.StringIO()))
        assert report.refused == [], report.refused[:3]
        assert await _state(empty) == before
    finally:
        await mongo_client.drop_database(empty.name)
