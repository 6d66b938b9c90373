"""`kernelindex serve` on its embedded database, as a user starts and stops it."""

import json
import os
import signal
import socket
import subprocess
import time

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


def test_commands_say_how_to_start_the_database_when_no_serve_runs(tmp_path):
    """No stack on this home: one `error:` line naming `kernelindex serve`, and no database of
    the command's own (it would be a stray one, or a second one behind a stack's back)."""
    home = tmp_path / "home"
    bundle = factories.run_bundle("standalone-1")
    manifests = tmp_path / "m.json"
    manifests.write_text(json.dumps([bundle.run.to_json()]))
    for argv in (["load", str(manifests)], ["export", "--kind", "BenchmarkRun"], ["keys", "list"]):
        done = subprocess.run([KERNELINDEX, *argv], env=_env(home), capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        assert done.stderr.splitlines() == [
            f"error: no KernelIndex database is running for {home}: start one with `kernelindex serve` "
            "(or `make serve` in the repository) and run this again, or set MONGODB_URI"
        ], argv
        assert done.stdout == ""
    assert not (home / "db").exists()


def test_a_relative_home_is_one_home_from_any_directory(tmp_path):
    """KERNELINDEX_HOME given relative is resolved once: `serve` started in one directory and a
    command run from another directory with the same (absolute) home meet on one database; the
    API verbs find the stack's URL through the home, whatever its port."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    port = free_port()
    proc = subprocess.Popen(
        [KERNELINDEX, "serve", "--port", str(port), "--no-data"],
        cwd=tmp_path / "a",
        env=_env(tmp_path / "a" / "home-rel") | {"KERNELINDEX_HOME": "home-rel"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_ready(proc, port)
        home = tmp_path / "a" / "home-rel"
        deadline = time.monotonic() + 30  # written once the gateway answers its readiness check
        while not (home / "stack.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert json.loads((home / "stack.json").read_text())["graphql"] == f"http://127.0.0.1:{port}/graphql"
        assert (home / "supergraph.graphql").is_file()
        created = subprocess.run(
            [KERNELINDEX, "keys", "create", "--name", "me", "--scope", "maintainer"],
            cwd=tmp_path / "b",
            env=_env(home),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert created.returncode == 0, created.stderr
        shown = subprocess.run(
            [KERNELINDEX, "jobs", "show", "QmVuY2htYXJrSm9iOm5vbmU="],
            cwd=tmp_path / "b",
            env={k: v for k, v in _env(home).items() if k != "KERNELINDEX_API"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        # It reached this stack's API (a refusal from it, not "cannot reach 127.0.0.1:8000").
        assert "cannot reach" not in shown.stderr, shown.stderr
        assert "error: no job QmVuY2htYXJrSm9iOm5vbmU=" in shown.stderr or f"127.0.0.1:{port}/graphql:" in shown.stderr, shown.stderr
        assert not (tmp_path / "b" / ".kernelindex").exists()
    finally:
        out = _stop(proc)
    assert f"web pages  http://127.0.0.1:{port}/" in out and f"GraphQL    http://127.0.0.1:{port}/graphql" in out
    assert not (tmp_path / "a" / "home-rel" / "stack.json").exists()
