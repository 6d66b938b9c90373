"""`kernelindex load` on hostile files: one `error:` line naming the problem, nothing written,
never a traceback, and fast."""

from __future__ import annotations

import json
import time

import pytest

from tests import factories
from tests.command import kernelindex


def _manifests(**run_changes) -> list[dict]:
    b = factories.run_bundle("hostile-1")
    docs = [m.to_json() for m in (b.definition, b.workload, b.protocol, b.environment, b.implementation, b.run)]
    run = docs[-1]
    for path, value in run_changes.items():
        target = run
        *parents, last = path.split(".")
        for part in parents:
            target = target[part]
        target[last] = value
    return docs


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _alias_bomb() -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, 12):
        lines.append(f"a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


CASES = {
    "integer of 2^63": (
        lambda: json.dumps(_manifests(**{"spec.sourceNative.metrics.sol_score": 2**63})),
        ".json",
        "spec.sourceNative.metrics.sol_score: an integer outside the 64-bit range",
    ),
    "100k-deep nesting": (lambda: _deep(100_000), ".json", "JSON nested too deeply"),
    "invalid UTF-8": (lambda: b'{"kind": "\xff\xfe"}', ".json", "not UTF-8: byte 0xff at offset 10"),
    "a 17 MB document": (
        lambda: json.dumps(_manifests(**{"spec.sourceNative.benchmark": "x" * 17_000_000})),
        ".json",
        "spec.sourceNative.benchmark: a string of 17,000,000 characters; at most 65,536",
    ),
    "a 10 MB title": (lambda: json.dumps(_manifests(**{"metadata.title": "t" * 10_000_000})), ".json", "metadata.title: a string of"),
    "a 1 MB external id": (
        lambda: json.dumps(_manifests(**{"spec.sourceNative.externalId": "e" * 1_000_000})),
        ".json",
        "spec.sourceNative.externalId: a string of 1,000,000 characters",
    ),
    "a 300-character external id": (
        lambda: json.dumps(_manifests(**{"spec.sourceNative.externalId": "e" * 300})),
        ".json",
        "spec.sourceNative.externalId: String should have at most 256 characters",
    ),
    "a 600-character title": (
        lambda: json.dumps(_manifests(**{"metadata.title": "t" * 600})),
        ".json",
        "metadata.title: String should have at most 500 characters",
    ),
    "100 labels": (
        lambda: json.dumps(_manifests(**{"metadata.labels": {f"k{n}": "v" for n in range(100)}})),
        ".json",
        "metadata.labels: Dictionary should have at most 64 items",
    ),
    "a lone surrogate": (lambda: json.dumps(_manifests(**{"metadata.title": "\ud800"})), ".json", "metadata.title: a lone surrogate"),
    "a YAML alias bomb": (_alias_bomb, ".yaml", "its aliases expand to more than 1,000,000 nodes"),
    "a recursive YAML alias": (lambda: "a: &a [*a]\n", ".yaml", "its aliases expand to more than"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_hostile_file_is_one_error_and_nothing_is_written(case, db, mongo_uri, tmp_path):
    make, suffix, expected = CASES[case]
    content = make()
    path = tmp_path / f"hostile{suffix}"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    started = time.monotonic()
    result = kernelindex("load", str(path), env={"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name})
    elapsed = time.monotonic() - started
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert all(line.startswith("error: ") for line in lines), result.stderr
    assert lines[-1] == "error: nothing was written"
    assert any(expected in line for line in lines), result.stderr
    assert elapsed < 20, f"{case} took {elapsed:.1f} s"
    for collection in ("runs", "definitions", "workloads", "comparison_groups", "events"):
        assert await db[collection].count_documents({}) == 0
