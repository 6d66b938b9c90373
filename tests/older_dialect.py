"""Our controlled evidence as the older dialect published it, for the tests that check its
re-expression in the v1alpha1 format: tests/fixtures/controlled-older-dialect/ (data/controlled
before the re-expression) and the runs inside the signed envelopes of data/verified/."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from registry.controlled_format import old_digest

ROOT = Path(__file__).resolve().parents[1]
OLDER = ROOT / "tests" / "fixtures" / "controlled-older-dialect"


def older_runs() -> dict[str, dict]:
    """Every older-dialect BenchmarkRun by its older digest."""
    runs = {}
    for path in sorted(OLDER.glob("*/manifests.json")):
        runs |= {old_digest(m): m for m in json.loads(path.read_text()) if m["kind"] == "BenchmarkRun"}
    for path in sorted((ROOT / "data" / "verified").glob("*.json")):
        statement = json.loads(base64.b64decode(json.loads(path.read_text())["envelope"]["payload"]))
        signed = [m for m in statement["predicate"]["manifests"] if m["kind"] == "BenchmarkRun" and "cases" in m["spec"]]
        runs |= {old_digest(m): m for m in signed}  # the signed results of the older dialect
    return runs
