"""End to end on the CPU: request → claim → run (the reference, harness CPU mode) → sign →
complete → the run is visible as KernelIndex Verified. The runner is a real process talking to a
real uvicorn server over HTTP; the offline path (job file in, signed result out) is tested too."""

import json
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import private_pem
from registry.format import format_digest
from resolvers import ids
from store.keys import Scope
from tests.command import KERNELINDEX
from tests.jobs import support

torch = pytest.importorskip("torch", reason="the CPU harness needs torch (the kernels extra)")

pytestmark = pytest.mark.slow


@pytest.fixture
def live_server(live_site):
    return f"{live_site}/graphql"


async def _cpu_registry(db) -> tuple[dict, str]:
    from kernels.harness.environment import environment_spec

    objects = support.harness_objects(small=True, samples=3)
    await support.publish_objects(db, *objects.values())
    return objects, environment_spec("cpu")["hardware"]["product"]


def _runner(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([KERNELINDEX, "runner", *args], capture_output=True, text=True, timeout=600)


async def test_cpu_job_online_to_verified_run(api, db, live_server, tmp_path):
    objects, cpu = await _cpu_registry(db)
    maintainer = await support.key(db, Scope.maintainer)
    signer = Ed25519PrivateKey.generate()
    runner_key = await support.key(db, Scope.runner, signer)
    key_file = tmp_path / "runner.pem"
    key_file.write_bytes(private_pem(signer))
    requested = await support.request(api, maintainer, objects, implementation="kernelindex-051-reference", gpu=cpu, cases=[0, 1])
    assert requested["userErrors"] == [], requested

    result = _runner("--api", live_server, "--api-key", runner_key, "--signing-key", str(key_file), "--gpu", cpu, "--once")
    assert result.returncode == 0, result.stderr[-3000:]
    job = (
        await api.data(
            "query($id: ID!) { benchmarkJob(id: $id) { state history { state } run { evidenceLevel status cases { index status samplesNs } workload { caseCount } } } }",
            {"id": requested["job"]["id"]},
        )
    )["benchmarkJob"]
    assert job["state"] == "succeeded", result.stderr[-3000:]
    assert [h["state"] for h in job["history"]] == ["queued", "claimed", "running", "succeeded"]
    assert job["run"]["evidenceLevel"] == "KERNELINDEX_VERIFIED" and job["run"]["status"] == "passed"
    assert job["run"]["workload"]["caseCount"] == 2 and len(job["run"]["cases"]) == 2
    assert all(len(c["samplesNs"]) == 3 for c in job["run"]["cases"])


async def test_cpu_job_offline_path(api, db, live_server, tmp_path):
    objects, cpu = await _cpu_registry(db)
    maintainer = await support.key(db, Scope.maintainer)
    signer = Ed25519PrivateKey.generate()
    runner_key = await support.key(db, Scope.runner, signer)
    key_file = tmp_path / "runner.pem"
    key_file.write_bytes(private_pem(signer))
    requested = await support.request(api, maintainer, objects, implementation="kernelindex-051-reference", gpu=cpu, cases=[1])
    job_file, result_file = tmp_path / "job.json", tmp_path / "result.dsse.json"
    cli = [KERNELINDEX]
    claimed = subprocess.run(
        [*cli, "jobs", "claim", "--api", live_server, "--api-key", runner_key, "--gpu", cpu, "--out", str(job_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert claimed.returncode == 0, claimed.stderr
    offline = _runner("--job", str(job_file), "--out", str(result_file), "--signing-key", str(key_file))
    assert offline.returncode == 0, offline.stderr[-3000:]
    assert json.loads(result_file.read_text())["envelope"]["payloadType"] == "application/vnd.in-toto+json"
    submitted = subprocess.run(
        [*cli, "submit-result", str(result_file), "--api", live_server, "--api-key", runner_key], capture_output=True, text=True, timeout=60
    )
    assert submitted.returncode == 0, submitted.stderr
    assert "succeeded" in submitted.stdout and "KERNELINDEX_VERIFIED" in submitted.stdout
    again = subprocess.run(
        [*cli, "submit-result", str(result_file), "--api", live_server, "--api-key", runner_key], capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 1 and "ALREADY_COMPLETED" in again.stderr
    doc = await db.jobs.find_one({"_id": ids.decode_as(requested["job"]["id"], "BenchmarkJob")})
    assert doc["state"] == "succeeded" and await db.runs.count_documents({"evidenceLevel": "KernelIndex Verified"}) == 1


async def test_runner_refuses_an_implementation_it_does_not_know(db, tmp_path):
    objects, cpu = await _cpu_registry(db)
    signer = Ed25519PrivateKey.generate()
    key_file = tmp_path / "runner.pem"
    key_file.write_bytes(private_pem(signer))
    document = {
        "id": "x",
        "jobId": "x",
        "gpu": cpu,
        "definition": {"digest": format_digest(objects["definition"]), "name": "x"},
        "implementation": {"name": "kernelindex-051-reference", "digest": "sha256:" + "9" * 64},
        "workload": objects["workload"].to_json(),
        "protocol": objects["protocol"].to_json(),
    }
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(document))
    result = _runner("--job", str(job_file), "--out", str(tmp_path / "r.json"), "--signing-key", str(key_file))
    assert result.returncode == 1 and "another revision" in result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["failure"]["code"] == "compile_error"


async def test_runner_refuses_another_revision_naming_the_commit_to_check_out(db, tmp_path):
    """A job for a revision whose code this runner does not hold fails with compile_error, and the
    message names the commit that holds the job's code (from the job's runner document)."""
    objects, cpu = await _cpu_registry(db)
    key_file = tmp_path / "runner.pem"
    key_file.write_bytes(private_pem(Ed25519PrivateKey.generate()))
    pinned = json.loads((Path(__file__).resolve().parents[2] / "data" / "code-pins.json").read_text())["pins"]
    old_compile = "sha256:215a1e6e7c4212708d4ad685fa24dacd0c8eb256bcc580af325215623c145ccf"
    document = {
        "id": "x",
        "jobId": "x",
        "gpu": cpu,
        "definition": {"digest": format_digest(objects["definition"]), "name": "x"},
        "implementation": {
            "name": "kernelindex-051-compile",
            "digest": "sha256:" + "8" * 64,
            "code": {"digest": old_compile, "commit": pinned[old_compile]["commit"]},
        },
        "workload": objects["workload"].to_json(),
        "protocol": objects["protocol"].to_json(),
    }
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(document))
    result = _runner("--job", str(job_file), "--out", str(tmp_path / "r.json"), "--signing-key", str(key_file))
    assert result.returncode == 1
    assert f"check out commit {pinned[old_compile]['commit']}" in result.stderr and old_compile in result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["failure"]["code"] == "compile_error"
