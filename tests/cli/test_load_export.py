"""`kernelindex load` and `export` as a user runs them (a real process, a real database)."""

import json
import os
import subprocess

import pytest
import yaml

from tests import factories
from tests.command import KERNELINDEX


def kernelindex(*args, env_extra=None, input=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([KERNELINDEX, *args], capture_output=True, text=True, env=env, input=input, timeout=120)


def _bundle_manifests(external_id="1", **kw):
    b = factories.run_bundle(external_id, **kw)
    return [m.to_json() for m in (b.definition, b.workload, b.protocol, b.environment, b.implementation, b.run)]


async def test_load_json_and_yaml_then_export_round_trips(db, mongo_uri, tmp_path):
    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    json_file = tmp_path / "runs.json"
    json_file.write_text(json.dumps(_bundle_manifests("1")))
    yaml_file = tmp_path / "more.yaml"
    yaml_file.write_text(yaml.safe_dump_all(_bundle_manifests("2", user="bob")))
    result = kernelindex("load", str(json_file), str(yaml_file), env_extra=env)
    assert result.returncode == 0, result.stderr
    assert "runs 2 new" in result.stdout
    again = kernelindex("load", str(json_file), env_extra=env)
    assert "runs 0 new, 1 unchanged" in again.stdout
    assert await db.runs.count_documents({}) == 2

    exported = kernelindex("export", "--kind", "BenchmarkRun", env_extra=env)
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert sorted(m["spec"]["sourceNative"]["externalId"] for m in lines) == ["1", "2"]
    everything = kernelindex("export", env_extra=env).stdout.splitlines()
    assert len(everything) == 2 + 2 + 1 + 1 + 1 + 1  # runs, implementations, definition, workload, protocol, env


async def test_bad_manifest_names_field_and_writes_nothing(db, mongo_uri, tmp_path):
    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    manifests = _bundle_manifests("1")
    manifests[-1]["spec"]["timing"]["latencyNs"]["mean"] = -5
    manifests[0]["spec"]["colour"] = "blue"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(manifests))
    result = kernelindex("load", str(path), env_extra=env)
    assert result.returncode == 1
    assert f"{path}[0]: spec.colour: unknown field" in result.stderr
    assert "spec.timing.latencyNs" in result.stderr
    assert "nothing was written" in result.stderr
    assert "Traceback" not in result.stderr
    for name in ("runs", "definitions", "workloads"):
        assert await db[name].count_documents({}) == 0


async def test_run_with_missing_reference_writes_nothing(db, mongo_uri, tmp_path):
    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    manifests = _bundle_manifests("1")
    del manifests[3]  # the environment
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(manifests))
    result = kernelindex("load", str(path), env_extra=env)
    assert result.returncode == 1
    assert "spec.environmentDigest: no ExecutionEnvironment with digest" in result.stderr
    assert await db.definitions.count_documents({}) == 0


def test_malformed_file_is_one_clear_error(tmp_path, mongo_uri):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    result = kernelindex("load", str(path), env_extra={"MONGODB_URI": mongo_uri})
    assert result.returncode == 1 and "not valid JSON" in result.stderr and "Traceback" not in result.stderr


def test_export_schema_prints_the_sdl():
    result = kernelindex("export-schema")
    assert result.returncode == 0 and "type Run implements Node" in result.stdout


async def test_import_command_from_the_bundled_snapshot_and_an_unreachable_host(db, mongo_uri):
    from pathlib import Path

    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    snapshot = Path(__file__).resolve().parents[2] / "data" / "snapshots" / "sol-execbench"
    result = kernelindex("import", "sol-execbench", "--snapshot", str(snapshot), env_extra=env)
    assert result.returncode == 0, result.stderr
    assert await db.runs.count_documents({"externalId": "37369"}) == 1
    unreachable = kernelindex("import", "sol-execbench", "--base-url", "http://127.0.0.1:9", env_extra=env)
    assert unreachable.returncode == 2
    assert "cannot connect to" in unreachable.stderr and "Traceback" not in unreachable.stderr


@pytest.mark.parametrize(
    ("index", "field", "change"),
    [
        (1, "spec.cases.2.axes.n", lambda spec: spec["cases"][2]["axes"].update(n=0)),
        (1, "spec.cases.0.axes.n", lambda spec: spec["cases"][0]["axes"].update(n=-1024)),
        (0, "spec.axes.n.value", lambda spec: spec["axes"]["n"].update(type="const", value=0)),
        (0, "spec.inputs.x.shape.1", lambda spec: spec["inputs"]["x"].update(shape=["n", -4])),
    ],
    ids=["zero-case-axis", "negative-case-axis", "zero-const-axis", "negative-dimension"],
)
async def test_a_zero_or_negative_axis_is_refused_and_nothing_is_written(db, mongo_uri, tmp_path, index, field, change):
    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    manifests = _bundle_manifests("1")  # the definition first, then its workload
    change(manifests[index]["spec"])
    path = tmp_path / "axes.json"
    path.write_text(json.dumps(manifests))
    result = kernelindex("load", str(path), env_extra=env)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: {path}[{index}]: {field}: Input should be greater than 0", "error: nothing was written"]
    for name in ("runs", "definitions", "workloads"):
        assert await db[name].count_documents({}) == 0
