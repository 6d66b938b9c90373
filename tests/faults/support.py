"""Real processes for fault injection: the installed `kernelindex` command, `secantusd-py`
children on a data directory, and the checks that what a crash leaves behind is consistent."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from pymongo import MongoClient

from registry.digest import manifest_digest
from registry.ranking import Entry, RankRule, leader, rank_entries
from tests import factories
from tests.command import KERNELINDEX
from tests.serving import env_for, start_serve, stop, wait_ready  # noqa: F401 (for the fault tests)


def kernelindex(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([KERNELINDEX, *args], env=env, capture_output=True, text=True, timeout=timeout)


def gone(pid: int, timeout: float = 10) -> bool:
    """Whether `pid` has exited (or is only a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if b"secantusd" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def manifests_file(path: Path, prefix: str, runs: int, groups: int = 5) -> list[str]:
    """A JSON file of `runs` runs spread over `groups` comparison groups (one GPU each), with every
    object they reference; returns the runs' external ids."""
    envs = [factories.environment(product=f"NVIDIA Fault-{g}") for g in range(groups)]
    defn = factories.definition()
    out, seen, external_ids = [], set(), []
    for n in range(runs):
        external_id = f"{prefix}-{n}"
        bundle = factories.run_bundle(
            external_id, env=envs[n % groups], defn=defn, score=(n * 37 % 101) / 100, latency_ns=10_000 + n * 7919 % 50_000
        )
        for m in (bundle.definition, bundle.workload, bundle.protocol, bundle.environment, bundle.implementation, bundle.run):
            key = manifest_digest(m)
            if key not in seen:
                seen.add(key)
                out.append(m.to_json())
        external_ids.append(external_id)
    path.write_text(json.dumps(out))
    return external_ids


def group_problems(uri: str, database: str = "kernelindex") -> list[str]:
    """Every way a stored comparison group disagrees with its runs (empty: consistent)."""
    client = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    try:
        db = client[database]
        problems = []
        for group in db.comparison_groups.find({}):
            key = group["_id"]
            members = list(db.runs.find({"groupKey": key, "current": True}, {"rank": 1, "rankValue": 1, "rankNoise": 1}))
            expected = rank_entries(
                RankRule(**group["rankRule"]), [Entry(m["_id"], m.get("rankValue"), m.get("rankNoise") or 0.0) for m in members]
            )
            stored = {m["_id"]: m.get("rank") for m in members}
            if group["size"] != len(members):
                problems.append(f"{key}: size {group['size']} but {len(members)} current runs")
            if group["rankedSize"] != sum(1 for r in stored.values() if r is not None):
                problems.append(f"{key}: rankedSize {group['rankedSize']} disagrees with its runs' ranks")
            if stored != expected:
                problems.append(f"{key}: stored ranks differ from the ranks of its runs")
            if group["leaderDigest"] != leader(expected):
                problems.append(f"{key}: leader {group['leaderDigest']} but its runs' #1 is {leader(expected)}")
            last = db.events.find_one({"type": "group.changed", "groupKey": key}, sort=[("seq", -1)])
            if members and (last is None or last["size"] != len(members)):
                problems.append(f"{key}: the last group.changed event says size {last and last['size']}, not {len(members)}")
        return problems
    finally:
        client.close()


def stored_external_ids(uri: str, database: str = "kernelindex") -> set[str]:
    client = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    try:
        return {doc["externalId"] for doc in client[database].runs.find({}, {"externalId": 1})}
    finally:
        client.close()


def job_event_problems(uri: str, database: str = "kernelindex") -> list[str]:
    """Every way the event log and the jobs collection disagree (empty: they agree): each job's
    `job.updated` events, in order, are its history's states, and every event names a job."""
    client = MongoClient(uri, serverSelectionTimeoutMS=10_000)
    try:
        db = client[database]
        states: dict[str, list[str]] = {}
        for event in db.events.find({"type": "job.updated"}, {"jobId": 1, "state": 1}).sort("seq", 1):
            states.setdefault(event["jobId"], []).append(event["state"])
        problems = []
        for job in db.jobs.find({}, {"history": 1}):
            history = [entry["state"] for entry in job["history"]]
            logged = states.pop(job["_id"], [])
            if logged != history:
                problems.append(f"job {job['_id']}: history {history} but events {logged}")
        problems += [f"events {logged} name job {job_id}, which does not exist" for job_id, logged in states.items()]
        return problems
    finally:
        client.close()
