"""What `serve` says about the code behind the bundled H200 runs: each implementation names the
commit holding its sources (pinned in data/code-pins.json, since those manifests predate
`code.commit`) and links to the code at that commit."""

import json
from pathlib import Path

from registry.digest import manifest_digest
from registry.manifests import make_manifest
from resolvers import ids
from server.bootstrap import bootstrap
from server.settings import Settings
from store.manifest_set import publish_set
from tests import factories

DATA = Path(__file__).resolve().parents[2] / "data"


async def test_verified_runs_name_the_commit_of_their_code(api, db, mongo_uri):
    await bootstrap(mongo_uri, Settings(database=db.name), DATA)
    await bootstrap(mongo_uri, Settings(database=db.name), DATA)  # the pins are written once
    pins = json.loads((DATA / "code-pins.json").read_text())["pins"]
    edges = (
        await api.data("""{ runs(filter: {evidenceLevel: KERNELINDEX_VERIFIED}) { edges { node {
        implementation { name code { repository commit path paths entryPoint digest language url } } } } } }""")
    )["runs"]["edges"]
    codes = [(e["node"]["implementation"]["name"], e["node"]["implementation"]["code"]) for e in edges]
    # The reruns signed over v1alpha1 digests (2026-12-03: ext-streamnorm, ext-hybrid; 2026-12-05:
    # ext-hybrid's next revision on an H100 and an H200): revisions whose commit is in their
    # manifest (projectRevision.commit) and whose files are pinned in data/code-pins.json.
    assert sorted(name for name, _ in codes) == ["kernelindex-051-ext-hybrid"] * 3 + ["kernelindex-051-ext-streamnorm"]
    hybrids = {code["digest"] for name, code in codes if name == "kernelindex-051-ext-hybrid"}
    assert len(hybrids) == 2
    for digest in hybrids:
        assert "kernels/ops/qkv_qknorm_backward/csrc/portable_norm.cu" in pins[digest]["paths"]
    for name, code in codes:
        pin = pins[code["digest"]]
        assert pin["note"] == name
        assert code["commit"] == pin["commit"] and len(code["commit"]) == 40 and code["paths"] == pin["paths"]
        assert code["repository"] == "kernelindex" and code["path"] == "kernels/ops/qkv_qknorm_backward"
        default = Settings().source_url
        assert code["url"] == f"{default}/tree/{pin['commit']}/kernels/ops/qkv_qknorm_backward"
    assert await db.code_pins.count_documents({}) == len(pins)


async def test_a_new_revision_carries_its_commit_and_one_without_has_no_link(api, db):
    defn = factories.definition("pinned-op")
    code = {"repository": "kernelindex", "path": "kernels/ops/x", "entryPoint": "kernels.ops.x:run", "language": "cuda"}
    new = make_manifest(
        "ImplementationRevision",
        "kernelindex-x-new",
        {
            "name": "x",
            "project": "kernelindex",
            "revision": "v2",
            "definitionDigest": manifest_digest(defn),
            "code": {**code, "digest": "sha256:" + "a" * 64, "commit": "b" * 40, "paths": ["kernels/ops/x/run.py"], "variant": {}},
        },
    )
    old = make_manifest(
        "ImplementationRevision",
        "kernelindex-x-old",
        {
            "name": "x",
            "project": "kernelindex",
            "revision": "v1",
            "definitionDigest": manifest_digest(defn),
            "code": {**code, "digest": "sha256:" + "c" * 64},
        },
    )
    await publish_set(db, [defn, new, old])
    query = "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Implementation { revision code { commit paths url } } } }"
    nodes = (await api.data(query, {"ids": [ids.encode("Implementation", manifest_digest(m)) for m in (new, old)]}))["nodes"]
    assert nodes[0] == {
        "revision": "v2",
        "code": {"commit": "b" * 40, "paths": ["kernels/ops/x/run.py"], "url": f"{Settings().source_url}/tree/{'b' * 40}/kernels/ops/x"},
    }
    assert nodes[1] == {"revision": "v1", "code": {"commit": None, "paths": None, "url": None}}
