"""Adding a source takes its folder and one registration line: the dummy source in
tests/loaders/dummy_source/ (synthetic, tests only) plugs into `kernelindex import` (its `-h`,
its own option, the errors for another source's options), the pipeline (publish, unchanged
re-import, a rejected record, a dry run), `serve`'s start-up data and the run pages' source name,
with no other file changed."""

from __future__ import annotations

import ast
import asyncio
import io
import json
import uuid
from pathlib import Path

import pytest
from rich.console import Console

import cli
from loaders import pipeline, sources
from store.client import make_client
from store.schema import ensure_schema

FOLDER = Path(__file__).parent / "dummy_source"
KEY = "dummy-synthetic"


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(sources, "SOURCES", [*sources.SOURCES, "tests.loaders.dummy_source.loader"])  # the one line


def write_snapshot(root: Path, shelves: dict[str, list[dict]]) -> Path:
    (root / "shelves").mkdir(parents=True)
    (root / "shelves.json").write_text(json.dumps({"shelves": list(shelves)}))
    for name, items in shelves.items():
        (root / "shelves" / f"{name}.json").write_text(json.dumps({"items": items}))
    return root


SHELVES = {
    "a": [{"id": 1, "user": "synthetic-ann", "latency_ns": 1000}, {"id": 2, "user": "synthetic-bob", "latency_ns": 900}],
    "b": [{"id": 3, "user": "synthetic-ann", "latency_ns": 500}, {"id": 4, "user": "synthetic-cid", "latency_ns": -1}],
}


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_the_folder_imports_nothing_of_ours_but_loaders_common_and_registry():
    """What the source is built from: no file outside its folder had to change for it."""
    ours = {"loaders", "registry", "store", "resolvers", "server", "web", "gateway", "cli", "client", "kernels"}
    for path in FOLDER.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ours:
                assert node.module.startswith(("loaders.common.", "registry.")), f"{path.name}: {node.module}"


def test_unregistered_it_is_unknown():
    assert KEY not in [loader.key for loader in sources.loaders()]
    with pytest.raises(KeyError):
        sources.get(KEY)


def test_the_command_line_reads_the_registry(registered, capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["import", "-h"])
    shown = " ".join(capsys.readouterr().out.split())
    assert KEY in shown and "sol-execbench" in shown and "a synthetic source for tests" in shown
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["import", KEY, "-h"])
    own = " ".join(capsys.readouterr().out.split())
    assert own.startswith(f"usage: kernelindex import {KEY}") and "--shelf" in own and "--kernel" not in own
    assert cli.main(["import", KEY, "--kernel", "51", "--snapshot", "/nowhere"]) == 1
    assert "error: --kernel: only for sol-execbench (dummy-synthetic selects shelves with --shelf)" in capsys.readouterr().err
    assert cli.main(["import", "sol-execbench", "--shelf", "a", "--snapshot", "/nowhere"]) == 1
    assert "error: --shelf: only for dummy-synthetic (sol-execbench selects kernels with --kernel)" in capsys.readouterr().err


def test_kernelindex_import_dummy_through_the_command_line(registered, tmp_path, mongo_uri, monkeypatch, capsys):
    snapshot = write_snapshot(tmp_path / "snap", SHELVES)
    name = f"test_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("MONGODB_URI", mongo_uri)
    monkeypatch.setenv("KERNELINDEX_DATABASE", name)
    assert cli.main(["import", KEY, "--snapshot", str(snapshot), "--dry-run"]) == 1  # item 4 is rejected
    assert "DRY RUN" in capsys.readouterr().err
    assert cli.main(["import", KEY, "--snapshot", str(snapshot), "--shelf", "a"]) == 0
    assert cli.main(["import", KEY, "--base-url", "http://127.0.0.1:9"]) == 2  # its open() refuses: fatal
    assert "Dummy import failed" in capsys.readouterr().err

    async def stored():
        client = make_client(mongo_uri)
        try:
            return sorted([d["externalId"] async for d in client[name].runs.find({"source": KEY, "current": True})])
        finally:
            await client.drop_database(name)
            await client.close()

    assert asyncio.run(stored()) == ["1", "2"]


async def test_the_pipeline_publishes_skips_unchanged_and_reports(registered, db, tmp_path):
    snapshot = write_snapshot(tmp_path / "snap", SHELVES)
    first = await pipeline.run_import(KEY, db, snapshot_dir=snapshot, console=quiet())
    assert (first.new, first.unchanged, first.parsed) == (3, 0, 3)
    assert [(p.subject, p.reason) for p in first.rejected] == [("item 4", "latency_ns: must be positive, got -1")]
    assert first.snapshots_saved == 3  # shelves.json, shelves/a.json, shelves/b.json
    assert await db.runs.count_documents({"source": KEY, "current": True}) == 3
    assert await db.comparison_groups.count_documents({}) == 2  # one per shelf's operation

    again = await pipeline.run_import(KEY, db, snapshot_dir=snapshot, console=quiet())
    assert (again.new, again.unchanged, again.snapshots_saved) == (0, 3, 0)  # fingerprints matched: nothing built

    SHELVES_CHANGED = {**SHELVES, "a": [{**SHELVES["a"][0], "latency_ns": 800}, SHELVES["a"][1]]}
    changed = write_snapshot(tmp_path / "changed", SHELVES_CHANGED)
    third = await pipeline.run_import(KEY, db, snapshot_dir=changed, console=quiet())
    assert (third.superseded, third.unchanged) == (1, 2)
    assert sources.source_title(KEY) == "Dummy" and sources.external_reference(KEY, "1") == "item/1"


async def test_serve_bootstrap_imports_its_bundled_folder(registered, db, tmp_path):
    write_snapshot(tmp_path / "data" / "snapshots" / KEY, {"a": SHELVES["a"]})
    await ensure_schema(db)
    await pipeline.import_bundled(db, tmp_path / "data")
    assert await db.runs.count_documents({"source": KEY}) == 2
    await pipeline.import_bundled(db, tmp_path / "data")  # idempotent
    assert await db.runs.count_documents({"source": KEY}) == 2
