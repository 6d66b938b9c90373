"""Bulk exports over HTTP (server/exports.py): `/exports/latest.json` and the export it names,
through Hive Gateway's forwarder of a real `kernelindex serve` with the bundled catalog; that
URL imported by the installed `kernelindex import kernelindex-catalog` into a second, empty
stack gives the same digests; a change of data makes a new export, one for concurrent readers."""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import zstandard

from resolvers.ids import encode
from tests.faults.support import manifests_file
from tests.serving import ServedStack

DIGEST_FIELDS = {
    "operations": "semanticDigest",
    "workloads": "workloadDigest",
    "implementations": "implementationDigest",
    "benchmark_runs": "runDigest",
}


def _latest(base: str) -> dict:
    response = httpx.get(f"{base}/exports/latest.json", timeout=600)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def _export(base: str, pointer: dict) -> tuple[bytes, list[dict]]:
    response = httpx.get(f"{base}/exports/{pointer['file']}", timeout=120)
    assert response.status_code == 200, response.text[:200]
    body = response.content
    lines = zstandard.ZstdDecompressor().decompressobj().decompress(body).decode().splitlines()
    return body, [json.loads(line) for line in lines]


def _digests(rows: list[dict]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {table: set() for table in DIGEST_FIELDS}
    for item in rows:
        if item["table"] in DIGEST_FIELDS:
            found[item["table"]].add(item["row"][DIGEST_FIELDS[item["table"]]])
    return found


@pytest.fixture(scope="module")
def second(tmp_path_factory):
    """A second stack, empty (`--no-data`): what the export is imported into."""
    started = ServedStack(tmp_path_factory.mktemp("exports-second") / "home", "--no-data", public_url=True).wait_ready()
    yield started
    started.stop()


# An export of the bundled catalog, its import into the second stack (45 s on a quiet 2-core
# machine) and a second export: past the suite's 300 s per test on a loaded one.
@pytest.mark.timeout(900)
def test_latest_json_names_an_export_that_imports_into_an_empty_stack_with_the_same_digests(stack, second, tmp_path):
    pointer = _latest(stack.base)
    assert re.fullmatch(r"catalog-\d{4}-\d{2}-\d{2}-[0-9a-f]{8}\.jsonl\.zst", pointer["file"])
    assert pointer["url"] == f"{stack.base}/exports/{pointer['file']}"
    body, rows = _export(stack.base, pointer)
    assert hashlib.sha256(body).hexdigest() == pointer["sha256"] and pointer["file"][19:27] == pointer["sha256"][:8]
    assert len(body) == pointer["sizeBytes"] and len(rows) == pointer["lines"]
    digests = _digests(rows)
    # the bundled catalog's 449 operations and 7,857 runs (data/kernelindex-catalog/README.md), and
    # ours; a run stored in our older dialect (the catalog's SOL-ExecBench runs that our own snapshot
    # import holds too are kept as ours) is left out, and counted as such
    assert len(digests["operations"]) >= 449
    assert len(digests["benchmark_runs"]) + pointer["leftOut"].get("benchmark_runs", 0) >= 7857
    events = sum(1 for item in rows if item["table"] == "record_events")
    assert events + pointer["leftOut"].get("record_events", 0) >= 2948
    # unchanged data: the same export, not a new one
    assert _latest(stack.base) == pointer
    assert httpx.get(f"{stack.base}/exports/catalog-2026-01-01-00000000.jsonl.zst", timeout=30).status_code == 404

    imported = second.cli(
        "import", "kernelindex-catalog", f"{stack.base}/exports/latest.json", env={"KERNELINDEX_API": second.url}, timeout=600
    )
    assert imported.returncode == 0, imported.stderr[-2000:]
    again = _latest(second.base)
    _, second_rows = _export(second.base, again)
    assert _digests(second_rows) == digests
    # and the stacks rank the same runs the same (a Run's ID encodes its digest: the same in both)
    fields = "digest rank group { size leader { digest } }"
    runs = [encode("Run", row["row"]["runDigest"]) for row in rows if row["table"] == "benchmark_runs"]
    ids = runs[:: max(1, len(runs) // 30)][:30]  # spread over the export
    query = f"query($ids: [ID!]!) {{ nodes(ids: $ids) {{ ... on Run {{ {fields} }} }} }}"
    first = stack.data(query, {"ids": ids})["nodes"]
    assert len(first) == 30 and all(first)
    assert second.data(query, {"ids": ids})["nodes"] == first


def test_a_change_of_data_makes_a_new_export_once_for_concurrent_readers(second, tmp_path):
    before = _latest(second.base)
    path = tmp_path / "runs.json"
    manifests_file(path, "exports", runs=3, groups=1)
    loaded = second.cli("load", str(path))
    assert loaded.returncode == 0, loaded.stderr
    with ThreadPoolExecutor(4) as pool:
        pointers = list(pool.map(lambda _: _latest(second.base), range(4)))
    assert all(p == pointers[0] for p in pointers), pointers  # one export, made once
    after = pointers[0]
    assert after["dataVersion"] != before["dataVersion"] and after["file"] != before["file"]
    assert after["lines"] > before["lines"]
    # the older file is still served (a client that read the previous pointer), nothing half-written is left
    assert httpx.get(f"{second.base}/exports/{before['file']}", timeout=60).status_code == 200
    folder = second.home / "exports"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".lock")) == sorted(
        {before["file"], after["file"], "latest.json"}
    )
