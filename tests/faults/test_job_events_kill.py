"""kill -9 of the database while runners and requesters drive jobs through `kernelindex serve`:
after a plain restart the event log and the jobs collection agree (a state change and its
`job.updated` event are one transaction)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import threading
import time

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import public_pem
from registry.format import format_digest
from resolvers import ids
from store.embedded import free_port
from tests.faults.support import env_for, job_event_problems, kernelindex, start_serve, stop, wait_ready
from tests.jobs import support as jobs_support

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")]

REQUEST = """mutation($input: BenchmarkJobRequestInput!) { benchmarkJobRequest(input: $input) { job { id } userErrors { code } } }"""
CLAIM = (
    """mutation($lease: Int!) { benchmarkJobClaim(input: {gpu: "NVIDIA H200", leaseSeconds: $lease}) { job { id } userErrors { code } } }"""
)
START = """mutation($job: ID!) { benchmarkJobStart(input: {job: $job}) { job { state } userErrors { code } } }"""
FAIL = """mutation($job: ID!) { benchmarkJobFail(input: {job: $job, code: runtime_error, message: "fault test"}) { job { state } userErrors { code } } }"""


def _registry_and_keys(tmp_path, env) -> tuple[str, str, str]:
    """The controlled definition's objects loaded with `kernelindex load`; a maintainer and a
    runner key from `kernelindex keys create`. Returns (definition ID, maintainer, runner)."""
    defn = jobs_support.definition("controlled-op")
    objects = [defn, jobs_support.workload(defn), jobs_support.controlled_protocol(), jobs_support.controlled_implementation(defn)]
    (tmp_path / "registry.json").write_text(json.dumps([m.to_json() for m in objects]))
    assert kernelindex("load", str(tmp_path / "registry.json"), env=env).returncode == 0
    (tmp_path / "runner.pub").write_text(public_pem(Ed25519PrivateKey.generate().public_key()))
    maintainer = kernelindex("keys", "create", "--name", "m", "--scope", "maintainer", env=env)
    runner = kernelindex("keys", "create", "--name", "r", "--scope", "runner", "--public-key", str(tmp_path / "runner.pub"), env=env)
    assert maintainer.returncode == 0 and runner.returncode == 0, maintainer.stderr + runner.stderr
    return ids.encode("Definition", format_digest(defn)), maintainer.stdout.strip(), runner.stdout.strip()


class Driver(threading.Thread):
    """One client: requests a job, claims one (a lease of 1 s sometimes, so later claims expire
    it), starts it and reports a runtime error (re-queued) — every step a state change and its
    event — until told to stop. Counts the answers that came back without errors."""

    def __init__(self, n: int, url: str, definition: str, maintainer: str, runner: str, done: threading.Event):
        super().__init__(daemon=True)
        self.n, self.url, self.definition, self.done = n, url, definition, done
        self.maintainer, self.runner = {"Authorization": f"Bearer {maintainer}"}, {"Authorization": f"Bearer {runner}"}
        self.answered = 0

    def _post(self, http: httpx.Client, query: str, variables: dict, headers: dict) -> dict | None:
        try:
            body = http.post(self.url, json={"query": query, "variables": variables}, headers=headers).json()
        except (httpx.HTTPError, ValueError):
            time.sleep(0.05)
            return None
        if body.get("errors") or not body.get("data"):
            return None
        self.answered += 1
        return next(iter(body["data"].values()))

    def run(self) -> None:
        rng = random.Random(self.n)
        with httpx.Client(timeout=30) as http:
            for i in range(100_000):
                if self.done.is_set():
                    return
                request = {"definition": self.definition, "implementation": "ext", "gpu": "NVIDIA H200", "idempotencyKey": f"d{self.n}-{i}"}
                self._post(http, REQUEST, {"input": request}, self.maintainer)
                claimed = self._post(http, CLAIM, {"lease": rng.choice([1, 600])}, self.runner)
                job = claimed and claimed["job"]
                if job and rng.random() < 0.7:
                    self._post(http, START, {"job": job["id"]}, self.runner)
                    if rng.random() < 0.5:
                        self._post(http, FAIL, {"job": job["id"]}, self.runner)


def test_kill_9_of_the_database_while_jobs_change_leaves_the_event_log_and_jobs_in_agreement(tmp_path):
    home, port = tmp_path / "home", free_port()
    env = env_for(home)
    proc = start_serve(home, port, "--no-data")
    try:
        wait_ready(proc, port)
        definition, maintainer, runner = _registry_and_keys(tmp_path, env)
        db_pid = json.loads((home / "db.json").read_text())["pid"]
        done = threading.Event()
        drivers = [Driver(n, f"http://127.0.0.1:{port}/graphql", definition, maintainer, runner, done) for n in range(6)]
        for driver in drivers:
            driver.start()
        time.sleep(random.uniform(4.0, 7.0))
        os.kill(db_pid, signal.SIGKILL)  # mid-way: some state changes are in flight right now
        out, _ = proc.communicate(timeout=60)  # serve stops when its database dies
        done.set()
        for driver in drivers:
            driver.join(timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
    answered = sum(driver.answered for driver in drivers)
    assert answered >= 30, f"only {answered} job mutations answered before the kill: the test drove too little load"

    proc = start_serve(home, port, "--no-data")
    try:
        wait_ready(proc, port)
        uri = json.loads((home / "db.json").read_text())["uri"]
        assert job_event_problems(uri) == []
    finally:
        stop(proc)
