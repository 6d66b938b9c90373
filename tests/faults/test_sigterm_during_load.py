"""SIGTERM to `serve` while a 500-run `kernelindex load` writes through its database: serve stops
cleanly, the load finishes or says in one line that it could not, and after a restart what was
acknowledged is there and every group agrees with its runs."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from store.embedded import EmbeddedServer, free_port
from tests.command import KERNELINDEX
from tests.faults.support import env_for, group_problems, manifests_file, start_serve, stored_external_ids, wait_ready

pytestmark = pytest.mark.slow


def test_sigterm_to_serve_during_a_load(tmp_path):
    home, port = tmp_path / "home", free_port()
    big = tmp_path / "big.json"
    ids = manifests_file(big, "term", runs=500)
    proc = start_serve(home, port, "--no-data")
    try:
        wait_ready(proc, port, timeout=240)
        uri = json.loads((home / "db.json").read_text())["uri"]
        load = subprocess.Popen(
            [KERNELINDEX, "load", str(big)], env=env_for(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(2.0)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        loaded_out, loaded_err = load.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "Traceback" not in loaded_err, loaded_err
    if load.returncode != 0:
        assert loaded_err.startswith("error: "), loaded_err
    assert not (home / "db.json").exists()

    with EmbeddedServer(home / "db") as server:
        assert group_problems(server.uri) == []
        written = stored_external_ids(server.uri) & set(ids)
        assert written in (set(), set(ids)), f"{len(written)} of 500 runs stored"
        if load.returncode == 0:
            assert written == set(ids) and "runs 500 new" in loaded_out
    assert uri
