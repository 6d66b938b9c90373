"""A runner never strands a job. Each test runs the installed `kernelindex runner` (a real
process) against a live server on the CPU: a job for a GPU this host lacks, a job whose
case raises, a long job that keeps its lease and is re-queued on SIGTERM, and a job
past the runner's time limit."""

import json
import signal
import subprocess
import time

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import private_pem
from resolvers import ids
from store.keys import Scope
from tests.command import KERNELINDEX, kernelindex
from tests.jobs import support

torch = pytest.importorskip("torch", reason="the CPU harness needs torch (the kernels extra)")

pytestmark = pytest.mark.slow


async def _registry(db, shapes: list[tuple[int, int]] | None = None) -> tuple[dict, str]:
    """051's operation, a suite (all 16 cases, or these shapes), the CPU and CUDA protocols and
    the reference implementation; and this host's CPU as jobs name it."""
    from kernels.harness import format_manifests
    from kernels.harness.environment import environment_spec
    from kernels.harness.protocol import Settings as HarnessSettings
    from kernels.operations import get_operation

    objects = support.harness_objects(shapes or list(get_operation("051").case_shapes), small=not shapes)
    await support.publish_objects(db, *objects.values(), format_manifests.protocol(HarnessSettings(device="cuda")))
    return objects, environment_spec("cpu")["hardware"]["product"]


async def _keys(db, tmp_path) -> tuple[str, str, str]:
    signer = Ed25519PrivateKey.generate()
    (tmp_path / "runner.pem").write_bytes(private_pem(signer))
    return await support.key(db, Scope.maintainer), await support.key(db, Scope.runner, signer), str(tmp_path / "runner.pem")


async def _job(db, requested: dict) -> dict:
    return await db.jobs.find_one({"_id": ids.decode_as(requested["job"]["id"], "BenchmarkJob")})


async def test_a_gpu_job_on_a_cpu_host_is_refused_online_and_reported_offline(api, db, live_site, tmp_path):
    objects, _cpu = await _registry(db, [(1, 1)])
    maintainer, runner_key, pem = await _keys(db, tmp_path)
    requested = await support.request(api, maintainer, objects, implementation="kernelindex-051-reference", gpu="NVIDIA H200")
    assert requested["userErrors"] == [], requested
    env = {"KERNELINDEX_API": f"{live_site}/graphql", "KERNELINDEX_API_KEY": runner_key}

    # Online: the runner checks the device it would claim for, and claims nothing.
    online = kernelindex("runner", "--signing-key", pem, "--gpu", "NVIDIA H200", "--once", env=env, timeout=300)
    assert online.returncode == 1 and "Traceback" not in online.stderr
    assert online.stderr.strip().splitlines()[-1].startswith("error: --gpu: this host has no 'NVIDIA H200'")
    assert (await _job(db, requested))["state"] == "queued"

    # Offline: the job document claimed elsewhere comes back as a coded failure, and the
    # job returns to the queue at once instead of waiting out its lease.
    claimed = kernelindex("jobs", "claim", "--gpu", "NVIDIA H200", "--out", str(tmp_path / "job.json"), env=env)
    assert claimed.returncode == 0, claimed.stderr
    offline = kernelindex(
        "runner", "--signing-key", pem, "--job", str(tmp_path / "job.json"), "--out", str(tmp_path / "result.json"), env=env, timeout=300
    )
    assert offline.returncode == 1 and "Traceback" not in offline.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["failure"]["code"] == "runtime_error"
    assert "asks for 'NVIDIA H200'" in result["failure"]["message"]
    submitted = kernelindex("submit-result", str(tmp_path / "result.json"), env=env)
    assert submitted.returncode == 0, submitted.stderr
    job = await _job(db, requested)
    assert job["state"] == "queued" and job["attempts"] == 1 and job["lease"] is None
    assert job["failure"]["code"] == "runtime_error"


async def test_a_case_that_raises_ends_as_a_runtime_error(api, db, live_site, tmp_path):
    # 10^12 tokens: a valid workload (axes are sizes, so at least 1) whose case raises on any
    # host, since its inputs (4 PB) cannot be allocated.
    objects, cpu = await _registry(db, [(1, 10**12)])
    maintainer, runner_key, pem = await _keys(db, tmp_path)
    requested = await support.request(api, maintainer, objects, implementation="kernelindex-051-reference", gpu=cpu)
    assert requested["userErrors"] == [], requested
    env = {"KERNELINDEX_API": f"{live_site}/graphql", "KERNELINDEX_API_KEY": runner_key}

    ran = kernelindex("runner", "--signing-key", pem, "--once", env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "Traceback" not in ran.stderr
    assert "failed (runtime_error): case 0: RuntimeError: " in ran.stderr and "can't allocate memory" in ran.stderr
    job = await _job(db, requested)
    assert job["state"] == "queued" and job["attempts"] == 1  # retried: runtime errors may be transient
    assert job["failure"]["code"] == "runtime_error" and "can't allocate memory" in job["failure"]["message"]
    assert [h["state"] for h in job["history"]] == ["queued", "claimed", "running", "queued"]


async def test_a_long_job_keeps_its_lease_and_sigterm_requeues_it(api, db, live_site, tmp_path):
    objects, cpu = await _registry(db)  # all 16 cases: minutes of work on one CPU thread
    maintainer, runner_key, pem = await _keys(db, tmp_path)
    requested = await support.request(api, maintainer, objects, implementation="kernelindex-051-reference", gpu=cpu)
    assert requested["userErrors"] == [], requested
    env = {"KERNELINDEX_API": f"{live_site}/graphql", "KERNELINDEX_API_KEY": runner_key}

    proc = subprocess.Popen(
        [KERNELINDEX, "runner", "--signing-key", pem, "--once", "--lease", "3"],
        env={**__import__("os").environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while (job := await _job(db, requested))["state"] != "running":
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() is not None else "not running"
            time.sleep(0.2)
        claimed_at = job["lease"]["claimedAt"]
        time.sleep(7)  # more than twice the 3 s lease
        job = await _job(db, requested)
        assert job["state"] == "running", job["history"]
        assert (job["lease"]["expiresAt"] - claimed_at).total_seconds() > 5  # renewed, not the first 3 s

        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "stopped (SIGTERM)" in stderr
    job = await _job(db, requested)
    assert job["state"] == "queued" and job["attempts"] == 1 and job["lease"] is None
    assert job["failure"]["code"] == "runtime_error" and "SIGTERM" in job["failure"]["message"]


async def test_a_job_past_its_time_limit_ends_as_a_timeout(api, db, live_site, tmp_path):
    objects, cpu = await _registry(db)  # all 16 cases: far longer than the 3 s allowed
    maintainer, runner_key, pem = await _keys(db, tmp_path)
    requested = await support.request(api, maintainer, objects, implementation="kernelindex-051-reference", gpu=cpu)
    assert requested["userErrors"] == [], requested
    env = {"KERNELINDEX_API": f"{live_site}/graphql", "KERNELINDEX_API_KEY": runner_key}
    job_file, result_file = str(tmp_path / "job.json"), tmp_path / "result.json"

    assert kernelindex("jobs", "claim", "--gpu", cpu, "--out", job_file, env=env).returncode == 0
    ran = kernelindex(
        "runner", "--signing-key", pem, "--job", job_file, "--out", str(result_file), "--job-timeout", "3", env=env, timeout=300
    )
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    failure = json.loads(result_file.read_text())["failure"]
    assert failure == {"code": "timeout", "message": "the job ran longer than 3 s"}
    assert kernelindex("submit-result", str(result_file), env=env).returncode == 0
    job = await _job(db, requested)
    assert job["state"] == "queued" and job["failure"]["code"] == "timeout"  # retried: it may fit another host
