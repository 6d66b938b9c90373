"""deploy/: what can be checked without a cluster. Every manifest parses; every `kernelindex`
command in them is accepted by the real command line; the gateway config loads in Node; and
`kernelindex supergraph` composes with the in-cluster URLs the manifests use."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from cli import build_parser
from server.settings import Settings
from tests.command import kernelindex

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _documents() -> list[dict]:
    docs = []
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _containers(docs: list[dict]) -> dict[str, dict]:
    found = {}
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet"):
            for container in doc["spec"]["template"]["spec"]["containers"]:
                found[doc["metadata"]["name"]] = container
    return found


def test_manifests_describe_the_topology_and_their_commands_parse():
    docs = _documents()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for expected in [
        ("StatefulSet", "mongodb"),
        ("Deployment", "registry"),
        ("Deployment", "benchmarks"),
        ("Deployment", "gateway"),
        ("Deployment", "web"),
        ("Deployment", "runner-h200"),
        ("Service", "registry"),
        ("Service", "benchmarks"),
    ]:
        assert expected in kinds
    containers = _containers(docs)
    assert "--replSet" in containers["mongodb"]["args"]
    config = next(d for d in docs if d["kind"] == "ConfigMap")
    assert "replicaSet=rs0" in config["data"]["MONGODB_URI"]
    parser = build_parser()
    commands = [c["command"] for c in containers.values() if c.get("command", [None])[0] == "kernelindex"]
    assert len(commands) == 4  # registry, benchmarks, web, runner
    for command in commands:
        parser.parse_args(command[1:])  # exits (fails the test) on an unknown option or value
    subgraphs = {name: parser.parse_args(containers[name]["command"][1:]) for name in ("registry", "benchmarks")}
    assert {n: a.subgraph for n, a in subgraphs.items()} == {"registry": "registry", "benchmarks": "benchmarks"}
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in docs if d["kind"] == "Deployment"}
    assert replicas["registry"] > 1 and replicas["benchmarks"] > 1
    gateway_args = containers["gateway"]["args"]
    assert gateway_args[:2] == ["supergraph", "/gateway/supergraph.graphql"] and "/gateway/gateway.config.mjs" in gateway_args
    mounts = {m["mountPath"]: m["subPath"] for m in containers["gateway"]["volumeMounts"]}
    assert mounts == {"/gateway/supergraph.graphql": "supergraph.graphql", "/gateway/gateway.config.mjs": "gateway.config.mjs"}


def test_the_gateway_gets_the_health_urls_limits_and_cors_origins_serve_gives_it():
    """What `serve` sets for Hive Gateway (gateway/stack.py, Settings.gateway_env) is set in the
    cluster too: readiness through each subgraph's /healthz, the subgraphs' query limits, the CORS
    origins from the shared ConfigMap."""
    docs = _documents()
    containers = _containers(docs)
    env = {e["name"]: e for e in containers["gateway"]["env"]}
    assert set(Settings().gateway_env()) | {"KERNELINDEX_HEALTH_URLS", "KERNELINDEX_WEB_URL", "KERNELINDEX_EXPORTS_URL"} == set(env)
    assert json.loads(env["KERNELINDEX_QUERY_LIMITS"]["value"]) == Settings().query_limits()
    services = {d["metadata"]["name"]: d["spec"]["ports"][0]["port"] for d in docs if d["kind"] == "Service"}
    probes = {name: containers[name]["readinessProbe"]["httpGet"]["path"] for name in ("registry", "benchmarks")}
    # /exports/ is the registry subgraph's, as serve forwards it (gateway/stack.py)
    assert env["KERNELINDEX_EXPORTS_URL"]["value"] == f"http://registry:{services['registry']}"
    expected = [f"http://{name}:{services[name]}{probes[name]}" for name in ("registry", "benchmarks")]
    assert env["KERNELINDEX_HEALTH_URLS"]["value"].split(",") == expected
    ref = env["KERNELINDEX_CORS_ORIGINS"]["valueFrom"]["configMapKeyRef"]
    config = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref["name"])
    assert config["data"][ref["key"]] == ""  # no cross-origin access unless the operator names origins


def test_the_dockerfile_copies_what_the_wheel_is_built_from():
    """deploy/Dockerfile runs `pip install .` on what it copied: every path it copies exists, and
    it copies every package of setup.py, setup.py itself and data/ (kernelindex_data)."""
    import ast

    copied = set()
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            copied |= set(words[1:-1])
    assert [path for path in copied if not (ROOT / path).exists()] == []
    tree = ast.parse((ROOT / "setup.py").read_text())
    packages = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PACKAGES")
    assert set(ast.literal_eval(packages)) | {"pyproject.toml", "setup.py", "README.md", "data"} <= copied


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_gateway_config_loads_and_supergraph_composes_for_the_cluster_urls():
    check = (
        "const { gatewayConfig: c } = await import(process.argv[1]);"
        "console.log(JSON.stringify({ws: c.transportEntries['*.http'].options.subscriptions.kind,"
        " plugins: c.plugins().length, headers: typeof c.propagateHeaders.fromClientToSubgraphs, cost: c.demandControl,"
        " limits: (await import(process.argv[1])).DEFAULT_LIMITS}));"
    )
    loaded = subprocess.run(
        ["node", "--input-type=module", "-e", check, str(ROOT / "gateway" / "gateway.config.mjs")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.returncode == 0, loaded.stderr
    # Without KERNELINDEX_QUERY_LIMITS (a gateway started by hand), the gateway's limits are the subgraphs'.
    assert json.loads(loaded.stdout) == {
        "ws": "ws",
        "plugins": 14,
        "headers": "function",
        "cost": {"maxCost": 5000, "listSize": 10},
        "limits": Settings().query_limits(),
    }

    result = kernelindex(
        "supergraph", "--registry-url", "http://registry:4001/graphql", "--benchmarks-url", "http://benchmarks:4002/graphql"
    )
    assert result.returncode == 0, result.stderr
    assert 'REGISTRY @join__graph(name: "registry", url: "http://registry:4001/graphql")' in result.stdout
    assert 'BENCHMARKS @join__graph(name: "benchmarks", url: "http://benchmarks:4002/graphql")' in result.stdout
