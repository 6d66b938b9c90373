"""kill -9 of the database: nothing acknowledged is lost, nothing half-written survives."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

import pytest

from store.embedded import EmbeddedServer
from tests.faults.support import KERNELINDEX, env_for, group_problems, kernelindex, manifests_file, stored_external_ids

pytestmark = pytest.mark.slow


def _kill_9(server: EmbeddedServer) -> None:
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()


def test_acknowledged_loads_survive_kill_9_of_the_database_20_times(tmp_path):
    storage, acknowledged = tmp_path / "db", set()
    for round_ in range(21):
        server = EmbeddedServer(storage, log_path=tmp_path / "secantusd.log")
        server.start()
        try:
            # Everything acknowledged before the previous kill is there.
            missing = acknowledged - stored_external_ids(server.uri)
            assert not missing, f"round {round_}: acknowledged runs lost: {sorted(missing)}"
            assert group_problems(server.uri) == []
            if round_ == 20:
                break
            path = tmp_path / f"round-{round_}.json"
            ids = manifests_file(path, f"ack{round_}", runs=3)
            loaded = kernelindex("load", str(path), env=env_for(tmp_path / "home", MONGODB_URI=server.uri))
            assert loaded.returncode == 0, loaded.stderr
            assert "runs 3 new, 0 unchanged" in loaded.stdout
            acknowledged |= set(ids)
        finally:
            _kill_9(server)  # at once: no shutdown, no checkpoint


def test_kill_9_in_the_middle_of_a_500_run_load_leaves_every_group_consistent(tmp_path):
    storage, env = tmp_path / "db", env_for(tmp_path / "home")
    server = EmbeddedServer(storage, log_path=tmp_path / "secantusd.log")
    server.start()
    try:
        # Groups that already have members, so a half-applied load would show in their size.
        before = tmp_path / "before.json"
        manifests_file(before, "before", runs=50)
        assert kernelindex("load", str(before), env={**env, "MONGODB_URI": server.uri}).returncode == 0
        big = tmp_path / "big.json"
        ids = manifests_file(big, "big", runs=500)
        load = subprocess.Popen(
            [KERNELINDEX, "load", str(big)],
            env={**env, "MONGODB_URI": server.uri},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Somewhere in the load: parsing, writing objects, or inside the runs' transaction.
        time.sleep(random.Random().uniform(1.0, 4.0))
        _kill_9(server)
        out, err = load.communicate(timeout=120)
    finally:
        if server.alive():
            _kill_9(server)
    # The load either finished before the kill or reports one error line, never a traceback.
    assert "Traceback" not in err, err
    if load.returncode != 0:
        assert err.startswith("error: "), err

    server = EmbeddedServer(storage, log_path=tmp_path / "secantusd.log")
    with server:
        assert group_problems(server.uri) == []
        stored = stored_external_ids(server.uri)
        written = stored & set(ids)
        assert written in (set(), set(ids)), f"{len(written)} of 500 runs stored: the load was not all-or-nothing"
        if load.returncode == 0:
            assert written == set(ids), "the load was acknowledged but its runs are gone"
            assert "runs 500 new" in out
