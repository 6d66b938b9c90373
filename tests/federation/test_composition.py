"""The subgraph composes with both real composers, and resolves entities by key."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from resolvers import ids
from store.publish import publish_many
from tests import factories

FEDERATION = Path(__file__).resolve().parents[2] / "federation"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_service_sdl_composes_with_guild_and_apollo(api, tmp_path):
    if not (FEDERATION / "node_modules").is_dir():
        pytest.fail("federation/node_modules missing: run `npm ci --prefix federation` (make test does)")
    sdl = (await api.data("{ _service { sdl } }"))["_service"]["sdl"]
    assert '@key(fields: "id")' in sdl and "federation/v2.9" in sdl
    path = tmp_path / "kernelindex.graphql"
    path.write_text(sdl)
    result = subprocess.run(["node", str(FEDERATION / "compose.mjs"), str(path)], capture_output=True, text=True, timeout=120)
    report = json.loads(result.stdout)
    assert report["guild"]["errors"] == [] and report["apollo"]["errors"] == [], report
    assert result.returncode == 0
    assert "type Run implements Node" in report["supergraphSdl"]


async def test_entities_resolve_by_key(api, db):
    outcomes = await publish_many(db, [factories.run_bundle(str(i), user=f"u{i}") for i in range(3)])
    reps = [{"__typename": "Run", "id": ids.encode("Run", o.run_digest)} for o in outcomes]
    reps.append({"__typename": "ComparisonGroup", "id": ids.encode("ComparisonGroup", outcomes[0].group_key)})
    data = await api.data(
        "query($r: [_Any!]!) { _entities(representations: $r) { ... on Run { digest } ... on ComparisonGroup { size } } }",
        {"r": reps},
    )
    assert [e.get("digest") for e in data["_entities"][:3]] == [o.run_digest for o in outcomes]
    assert data["_entities"][3] == {"size": 3}
