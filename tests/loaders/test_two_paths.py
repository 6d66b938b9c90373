"""One source record reached by two paths is one run: our SOL-ExecBench importer and the KernelIndex
catalog export write the same v1alpha1 manifests (the same digests) through one write path, into
the cohort the seed system keys, in either order. A run of the older dialect is superseded.

The SOL-ExecBench snapshots here are the bundled one (kernel 51 and submission 37369) plus
submission 32664 rebuilt from the facts the catalog's own row states (as
tests/loaders/test_sol_format.py does); the catalog is the bundled export's rows of 051."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from loaders import pipeline
from loaders.sol_execbench import normalize, parse
from store.bundle import Bundle
from store.publish import publish_many
from tests.loaders.catalog_exports import bundled_lines, subset, write_export

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "data" / "snapshots" / "sol-execbench"
SEED_RUN = "sha256:3c2100b045792938b030dc99e62585550012b982921e377090ef1d6ec04d9c56"
SEED_COHORT = "sha256:407b8c453f0c0ea5e1a8e843f180ef83bc866e2b68ce4168dd60008c20624dbe"


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def catalog_row(external_id: str) -> dict:
    (row,) = [
        item["row"]
        for item in bundled_lines()
        if item["table"] == "benchmark_runs" and item["row"]["manifest"]["run"]["spec"]["sourceNative"].get("externalId") == external_id
    ]
    return row


def submission_from_catalog(external_id: str) -> dict:
    """The SOL-ExecBench API record of a submission, from what the catalog's row states."""
    row = catalog_row(external_id)
    implementations = {i["row"]["id"]: i["row"] for i in bundled_lines() if i["table"] == "implementations"}
    native = row["manifest"]["run"]["spec"]["sourceNative"]
    return {
        "id": int(external_id),
        "username": implementations[row["implementationId"]]["manifest"]["metadata"]["authors"][0]["name"],
        "kernel_id": 51,
        "status": "COMPLETED",
        "is_correct": True,
        "is_disqualified": False,
        **native["metrics"],
        "gpu_type": "B200",
        "worker_id": row["manifest"]["run"]["metadata"].get("labels", {}).get("worker"),
        "evaluation_stack_version": row["manifest"]["protocol"]["spec"]["harness"]["version"],
        "finished_at": row["manifest"]["run"]["spec"]["observedAt"].rstrip("Z"),
    }


@pytest.fixture
def snapshot(tmp_path) -> Path:
    """The bundled SOL-ExecBench snapshot with 32664 on its page beside 37369."""
    root = shutil.copytree(BUNDLED, tmp_path / "sol")
    path = root / "submissions" / "51" / "offset-0.json"
    page = json.loads(path.read_text())
    page["data"]["submissions"].append(submission_from_catalog("32664"))
    page["data"]["total"] = 2
    path.write_text(json.dumps(page))
    return root


@pytest.fixture
def catalog(tmp_path) -> Path:
    return write_export(tmp_path / "catalog", subset("051"))


async def sol(db, snapshot):
    return await pipeline.run_import("sol-execbench", db, snapshot_dir=snapshot, console=quiet())


async def cat(db, target):
    return await pipeline.run_import("kernelindex-catalog", db, target=str(target), console=quiet())


async def check_cohort(db):
    """The seed's cohort: 37369 and the catalog's three, one run each, ranked by SOL score."""
    runs = {doc["externalId"]: doc async for doc in db.runs.find({"source": "sol-execbench", "groupKey": SEED_COHORT})}
    assert set(runs) == {"37369", "32664", "32555", "33003"}
    assert all(run["current"] for run in runs.values())
    assert await db.runs.count_documents({"source": "sol-execbench", "externalId": {"$in": ["32664", "32555", "33003"]}}) == 3
    assert {e: r["rank"] for e, r in runs.items()} == {"32664": 1, "32555": 2, "33003": 3, "37369": 4}
    assert runs["37369"]["_id"] == SEED_RUN
    assert runs["32664"]["_id"] == catalog_row("32664")["runDigest"]
    for external in ("37369", "32664"):
        assert await db.runs.count_documents({"source": "sol-execbench", "externalId": external, "current": True}) == 1
    group = await db.comparison_groups.find_one({"_id": SEED_COHORT})
    assert (group["size"], group["rankedSize"], group["leaderDigest"]) == (4, 4, runs["32664"]["_id"])
    return runs


async def test_sol_first_then_the_catalog(db, snapshot, catalog):
    first = await sol(db, snapshot)
    assert (first.new, first.unchanged, first.superseded) == (2, 0, 0)
    report = await cat(db, catalog)
    # 32664 is stored already with the same digest: one document, now with the catalog's provenance too.
    assert report.outcome.reconciled == []
    runs = await check_cohort(db)
    assert runs["32664"]["provenance"][0]["export"]["file"] == catalog.name
    assert runs["32664"]["sourceRecord"].startswith("sha256:")  # and our importer's fingerprint
    assert "provenance" not in runs["37369"]
    # The operation, suite and implementation of 32664 are the catalog's documents, not copies.
    assert await db.implementations.count_documents({"_id": runs["32664"]["spec"]["implementationDigest"]}) == 1
    assert await db.workloads.count_documents({"kind": "WorkloadSuite", "definitionDigest": runs["37369"]["definitionDigest"]}) == 1


async def test_the_catalog_first_then_sol(db, snapshot, catalog):
    await cat(db, catalog)
    report = await sol(db, snapshot)
    assert (report.new, report.unchanged, report.superseded) == (1, 1, 0)  # 37369 new, 32664 held already
    runs = await check_cohort(db)
    # The run the catalog wrote now carries our importer's fingerprint: the next import skips it unbuilt.
    assert runs["32664"]["sourceRecord"].startswith("sha256:")
    again = await sol(db, snapshot)
    assert (again.new, again.unchanged, again.superseded) == (0, 2, 0)


async def test_a_run_of_the_older_dialect_is_superseded(db, snapshot, catalog):
    """A database that holds the seed record as the older dialect published it (another digest,
    in a comparison group of its own) gets the format's run, which supersedes it."""
    kernel = parse.parse_kernel((BUNDLED / "kernels" / "51.json").read_bytes())
    manifests = normalize.normalize_kernel(kernel)
    (record,) = parse.parse_page((BUNDLED / "submissions" / "51" / "offset-0.json").read_bytes()).records
    old = normalize.normalize_submission(parse.parse_submission(record), manifests)
    (outcome,) = await publish_many(
        db,
        [
            Bundle(
                run=old.run,
                definition=manifests.definition,
                workload=manifests.workload,
                protocol=old.protocol,
                environment=old.environment,
                implementation=old.implementation,
            )
        ],
    )
    assert outcome.status == "new" and outcome.run_digest != SEED_RUN
    old_group = outcome.group_key
    assert old_group != SEED_COHORT

    report = await sol(db, snapshot)
    assert (report.new, report.superseded) == (1, 1)
    await cat(db, catalog)
    runs = await check_cohort(db)
    before = await db.runs.find_one({"_id": outcome.run_digest})
    assert before["current"] is False and before["supersededBy"] == SEED_RUN and before["rank"] is None
    assert runs["37369"]["supersedes"] == outcome.run_digest
    assert await db.runs.count_documents({"externalId": "37369"}) == 2  # the old run is kept
    # Its old group keeps no current run, and its record history says so ("no ranked run is left").
    group = await db.comparison_groups.find_one({"_id": old_group})
    assert (group["size"], group["leaderDigest"]) == (0, None)
    (change,) = await db.records.find({"groupKey": old_group, "runDigest": None}).to_list()
    assert change["cause"] == "retraction" and change["previousDigest"] == outcome.run_digest
