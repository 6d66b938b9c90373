"""kill -9 of `serve`: its database child goes with it, and a plain restart works."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import httpx
import pytest

from store.embedded import EmbeddedServer, free_port
from tests.faults.support import env_for, gone, kernelindex, manifests_file, start_serve, stop, wait_ready

pytestmark = pytest.mark.slow


def _titles(port: int) -> list[str]:
    body = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": "{ runs(first: 100) { nodes { title } } }"}, timeout=10).json()
    return [node["title"] for node in body["data"]["runs"]["nodes"]]


def test_kill_9_of_serve_then_a_plain_restart(tmp_path):
    home, port = tmp_path / "home", free_port()
    proc = start_serve(home, port, "--no-data")
    try:
        wait_ready(proc, port)
        db_pid = json.loads((home / "db.json").read_text())["pid"]
        path = tmp_path / "runs.json"
        manifests_file(path, "serve-kill", runs=4, groups=2)
        assert kernelindex("load", str(path), env=env_for(home)).returncode == 0
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    # The kernel ends the database child with its parent; nobody has to find the orphan.
    assert gone(db_pid, timeout=20), "the database child outlived serve"
    assert (home / "db.json").exists()  # stale: serve had no chance to remove it

    proc = start_serve(home, port, "--no-data")
    try:
        wait_ready(proc, port)
        assert len(_titles(port)) == 4
    finally:
        out = stop(proc)
    assert proc.returncode == 0, out
    recovered = [line for line in out.splitlines() if "stale" in line]
    assert len(recovered) == 1 and "db.json" in recovered[0], out


def test_an_orphaned_database_from_an_older_serve_is_stopped_on_the_next_start(tmp_path):
    """A database child left running (as by a serve without the parent-death signal) holding the
    files, with an address file whose owner is gone: the next serve stops it and starts."""
    home, port = tmp_path / "home", free_port()
    owner = subprocess.Popen(["true"])
    owner.wait()  # a pid that no longer runs
    orphan = EmbeddedServer(home / "db", log_path=tmp_path / "orphan.log")
    orphan.start()
    try:
        home.mkdir(exist_ok=True)
        (home / "db.json").write_text(json.dumps({"uri": orphan.uri, "pid": orphan.process.pid, "owner": owner.pid}))
        proc = start_serve(home, port, "--no-data")
        try:
            wait_ready(proc, port)
            assert orphan.process.poll() is not None, "the orphan still runs"
            assert _titles(port) == []
        finally:
            out = stop(proc)
        assert proc.returncode == 0, out
        line = next(line for line in out.splitlines() if "stale" in line)
        assert f"pid {orphan.process.pid}" in line
    finally:
        orphan.stop()


def test_a_second_serve_on_the_same_home_is_one_clear_error(tmp_path):
    home, port = tmp_path / "home", free_port()
    proc = start_serve(home, port, "--no-data")
    try:
        wait_ready(proc, port)
        second = kernelindex("serve", "--port", str(free_port()), "--no-data", env=env_for(home), timeout=60)
        assert second.returncode == 1
        assert second.stderr.strip() == f"error: another kernelindex serve (pid {proc.pid}) is using the database in {home}; stop it first"
        assert os.path.exists(home / "db.json")  # the running serve's address is left alone
    finally:
        stop(proc)
