"""Signed results kept under data/verified/ are verified against the approved runner keys on every
load of the bundled data, and only then shown as KernelIndex Verified; a start whose files and
importing code are the last full load's loads nothing, one after a change or a failed load does."""

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import public_pem
from registry.format import format_digest
from server.bootstrap import BootstrapError, bootstrap
from server.settings import Settings
from tests.jobs import support


def _data_dir(tmp_path, signer, runner_key):
    objects = {
        "definition": (defn := support.definition("controlled-op")),
        "workload": support.workload(defn),
        "protocol": support.controlled_protocol(),
        "implementation": support.controlled_implementation(defn),
    }
    (tmp_path / "controlled" / "h200").mkdir(parents=True)
    (tmp_path / "controlled" / "h200" / "manifests.json").write_text(json.dumps([m.to_json() for m in objects.values()]))
    (tmp_path / "runners").mkdir()
    (tmp_path / "runners" / "h200.pem").write_text(public_pem(runner_key.public_key()))
    job = {
        "_id": "job1",
        "gpu": support.GPU,
        "expected": {
            "protocolDigest": format_digest(objects["protocol"]),
            "workloadDigest": format_digest(objects["workload"]),
            "implementationDigest": format_digest(objects["implementation"]),
        },
    }
    (tmp_path / "verified").mkdir()
    envelope = json.loads(support.signed_result(job, signer))
    (tmp_path / "verified" / "job1.json").write_text(json.dumps({"job": "job1", "envelope": envelope}))
    return tmp_path / "verified" / "job1.json"


async def test_signed_result_files_become_verified_runs(api, db, mongo_uri, tmp_path):
    signer = Ed25519PrivateKey.generate()
    _data_dir(tmp_path, signer, signer)
    await bootstrap(mongo_uri, Settings(database=db.name), tmp_path)
    await bootstrap(mongo_uri, Settings(database=db.name), tmp_path)  # idempotent
    runs = (await api.data("{ runs(filter: {evidenceLevel: KERNELINDEX_VERIFIED}) { edges { node { title group { title } } } } }"))["runs"][
        "edges"
    ]
    assert [r["node"]["title"] for r in runs] == ["ext · controlled-op · H200"]
    assert runs[0]["node"]["group"]["title"] == "kernelindex-controlled v1 · H200"


async def test_result_signed_by_an_unapproved_key_stops_the_start(db, mongo_uri, tmp_path):
    _data_dir(tmp_path, Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate())
    with pytest.raises(BootstrapError, match="SIGNATURE_INVALID"):
        await bootstrap(mongo_uri, Settings(database=db.name), tmp_path)
    assert await db.runs.count_documents({}) == 0


async def test_tampered_result_file_stops_the_start(db, mongo_uri, tmp_path):
    signer = Ed25519PrivateKey.generate()
    path = _data_dir(tmp_path, signer, signer)
    record = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(record["envelope"]["payload"]))
    statement["predicate"]["manifests"][0]["spec"]["measurements"][0]["value"] = 7
    record["envelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(record))
    with pytest.raises(BootstrapError, match="SIGNATURE_INVALID"):
        await bootstrap(mongo_uri, Settings(database=db.name), tmp_path)
    assert await db.runs.count_documents({}) == 0


async def test_a_start_with_the_last_loads_files_imports_nothing(db, mongo_uri, tmp_path):
    signer = Ed25519PrivateKey.generate()
    path = _data_dir(tmp_path, signer, signer)
    settings = Settings(database=db.name)
    first, second, third = [], [], []
    await bootstrap(mongo_uri, settings, tmp_path, say=first.append)
    assert any("the verified reruns: 1 signed results checked" in line for line in first)
    await bootstrap(mongo_uri, settings, tmp_path, say=second.append)
    assert second == ["bundled data: the files and the code that imports them are those of the last load: nothing to import"]

    # A changed file is loaded again: here a result that no longer matches its signature stops the
    # start, and that load is not recorded, so the next start (the file mended) loads everything.
    original = path.read_text()
    record = json.loads(original)
    statement = json.loads(base64.b64decode(record["envelope"]["payload"]))
    statement["predicate"]["manifests"][0]["spec"]["measurements"][0]["value"] = 7
    record["envelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(record))
    with pytest.raises(BootstrapError, match="SIGNATURE_INVALID"):
        await bootstrap(mongo_uri, settings, tmp_path)
    path.write_text(original)
    await bootstrap(mongo_uri, settings, tmp_path, say=third.append)
    assert any("the verified reruns: 1 signed results checked" in line for line in third)
