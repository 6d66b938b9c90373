"""`kernelindex serve` on its embedded database, as a user starts and stops it."""

import json
import os
import signal
import socket
import subprocess

import httpx
import pytest

from store.embedded import free_port
from tests import factories
from tests.command import KERNELINDEX
from tests.serving import env_for as _env
from tests.serving import start_serve as _start
from tests.serving import stop as _stop
from tests.serving import wait_ready as _wait_ready

pytestmark = pytest.mark.slow


def _query(port: int, query: str) -> dict:
    return httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": query}, timeout=10).json()


def test_data_survives_a_restart_and_the_database_stops_cleanly(tmp_path):
    home, port = tmp_path / "home", free_port()
    proc = _start(home, port, "--no-data")
    try:
        _wait_ready(proc, port)
        db_pid = json.loads((home / "db.json").read_text())["pid"]
        bundle = factories.run_bundle("persist-1")
        manifests = tmp_path / "m.json"
        manifests.write_text(
            json.dumps(
                [
                    m.to_json()
                    for m in (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run)
                ]
            )
        )
        # `load` finds the server that `serve` started, through its address file.
        loaded = subprocess.run([KERNELINDEX, "load", str(manifests)], env=_env(home), capture_output=True, text=True, timeout=60)
        assert loaded.returncode == 0, loaded.stderr
        assert _query(port, "{ runs { edges { node { title } } } }")["data"]["runs"]["edges"] != []
    finally:
        _stop(proc)
    assert proc.returncode == 0
    assert not (home / "db.json").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(db_pid, 0)  # the database child is gone too

    proc = _start(home, port, "--no-data")
    try:
        _wait_ready(proc, port)
        titles = [e["node"]["title"] for e in _query(port, "{ runs { edges { node { title } } } }")["data"]["runs"]["edges"]]
        assert titles == ["alice · synthetic-op · B200"]
    finally:
        _stop(proc)


def test_port_in_use_is_one_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([KERNELINDEX, "serve", "--port", str(port)], env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: port {port} on 127.0.0.1 is already in use; choose another with --port"


def test_database_port_in_use_is_one_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        db_port = taken.getsockname()[1]
        result = subprocess.run(
            [KERNELINDEX, "serve", "--port", str(free_port()), "--db-port", str(db_port)],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert f"error: port {db_port} on 127.0.0.1 is already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_database_not_up_in_time_is_one_clear_error(tmp_path):
    result = subprocess.run(
        [KERNELINDEX, "serve", "--port", str(free_port()), "--db-timeout", "0.01"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "error: the embedded database did not answer ping within" in result.stderr
    assert "Traceback" not in result.stderr


def test_dead_database_child_stops_serve_with_an_error(tmp_path):
    home, port = tmp_path / "home", free_port()
    proc = _start(home, port, "--no-data")
    try:
        _wait_ready(proc, port)
        os.kill(json.loads((home / "db.json").read_text())["pid"], signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    assert "error: the embedded database exited unexpectedly" in out


def test_commands_start_the_embedded_database_themselves_when_no_serve_runs(tmp_path):
    home = tmp_path / "home"
    bundle = factories.run_bundle("standalone-1")
    manifests = tmp_path / "m.json"
    manifests.write_text(
        json.dumps(
            [
                m.to_json()
                for m in (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run)
            ]
        )
    )
    loaded = subprocess.run([KERNELINDEX, "load", str(manifests)], env=_env(home), capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    exported = subprocess.run(
        [KERNELINDEX, "export", "--kind", "BenchmarkRun"], env=_env(home), capture_output=True, text=True, timeout=120
    )
    assert exported.returncode == 0, exported.stderr
    assert [json.loads(line)["metadata"]["name"] for line in exported.stdout.splitlines()] == ["synthetic-standalone-1"]
    assert (home / "db").is_dir() and not (home / "db.json").exists()
