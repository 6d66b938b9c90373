"""A plain install serves: the session's wheel (tests/wheel_build.py) installed with pip into a fresh
virtual environment, then that environment's `kernelindex serve` started from an empty directory
with no KERNELINDEX_* nor MONGODB_URI, as a user who ran `pip install .` would. It must install the
pinned npm packages itself (into the user cache: a private XDG_CACHE_HOME, and a private, empty npm
cache, so nothing of this machine's is reused), load the bundled data from the package, and answer
through Hive Gateway: GraphQL, a page, and GraphiQL with its assets.

Slow (minutes: pip resolves the dependencies, npm downloads ~190 MB of packages, the catalog
imports): one install and one stack for the module."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gateway.stack import READY
from store.embedded import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def venv(kernelindex_wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("plain-install") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(kernelindex_wheel)], capture_output=True, text=True, timeout=1200
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return venv


def user_env(tmp: Path) -> dict[str, str]:
    """This machine's environment less everything of KernelIndex's and of this test's venv; a
    private data directory, cache directory and npm cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_") and k not in ("MONGODB_URI", "VIRTUAL_ENV")}
    dev_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != dev_bin)
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "npm_config_cache"):
        (tmp / name).mkdir()
        env[name] = str(tmp / name)
    return env


@pytest.fixture(scope="module")
def stack(venv, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user")
    empty = tmp / "empty"
    empty.mkdir()
    env = user_env(tmp)
    port = free_port()
    log = tmp / "serve.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(venv / "bin" / "kernelindex"), "serve", "--port", str(port)], cwd=empty, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 1500
        while READY not in log.read_text():
            assert process.poll() is None, f"serve exited ({process.returncode}):\n{log.read_text()[-4000:]}"
            assert time.monotonic() < deadline, f"serve not ready:\n{log.read_text()[-4000:]}"
            time.sleep(1)
        yield {"url": f"http://127.0.0.1:{port}", "log": log.read_text(), "env": env, "empty": empty, "venv": venv}
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_installed_package_has_no_repository_beside_it(venv):
    site = next((venv / "lib").glob("python*/site-packages"))
    assert (site / "kernelindex_data" / "code-pins.json").is_file()
    assert not (site / "gateway" / "node_modules").exists()
    assert not (site / "data").exists()


def test_serve_installs_the_npm_packages_into_the_user_cache_once(stack):
    cache = Path(stack["env"]["XDG_CACHE_HOME"]) / "kernelindex" / "npm"
    trees = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert [t.rsplit("-", 1)[0] for t in trees] == ["gateway", "web-assets"]
    assert (cache / trees[0] / "node_modules" / ".bin" / "hive-gateway").exists()
    assert stack["log"].count("installing Hive Gateway and the federation composers (npm ci") == 1
    assert "installing GraphiQL's assets" in stack["log"]
    # The gateway ran the config copied beside the cached packages, and nothing was left in the caller's directory.
    assert f"{cache / trees[0]}/files-" in stack["log"]
    assert list(stack["empty"].iterdir()) == []


def test_the_bundled_data_is_served_through_the_gateway(stack):
    query = """{ seed: runByExternalId(source: "sol-execbench", externalId: "37369") { digest title }
                 definitions { name } }"""
    body = httpx.post(f"{stack['url']}/graphql", json={"query": query}, timeout=60).json()
    assert "errors" not in body, body
    assert body["data"]["seed"]["digest"].startswith("sha256:")
    # The catalog's operations (449) besides the snapshot's and the controlled runs' own.
    assert len(body["data"]["definitions"]) > 400


def test_pages_and_graphiql_are_served(stack):
    home = httpx.get(stack["url"] + "/", headers={"accept": "text/html"}, timeout=60)
    assert home.status_code == 200 and "<html" in home.text
    seed = httpx.post(
        f"{stack['url']}/graphql",
        json={"query": '{ runByExternalId(source: "sol-execbench", externalId: "37369") { digest } }'},
        timeout=60,
    )
    digest = seed.json()["data"]["runByExternalId"]["digest"]
    run = httpx.get(f"{stack['url']}/runs/{digest}", headers={"accept": "text/html"}, timeout=60)
    assert run.status_code == 200 and "37369" in run.text
    graphiql = httpx.get(stack["url"] + "/graphiql", headers={"accept": "text/html"}, timeout=60)
    assert graphiql.status_code == 200, graphiql.text
    script = httpx.get(stack["url"] + "/static/graphiql/graphiql.min.js", timeout=60)
    assert script.status_code == 200 and len(script.content) > 1_000_000


def test_without_node_serve_says_so_in_one_line(venv, tmp_path):
    env = user_env(tmp_path)
    env["PATH"] = str(venv / "bin")  # no node, no npm
    done = subprocess.run(
        [str(venv / "bin" / "kernelindex"), "serve", "--port", str(free_port())],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line, no traceback
    assert done.stderr.startswith("error: node and npm not found on PATH")
    assert not (Path(env["XDG_DATA_HOME"]) / "kernelindex" / "db").exists()  # refused before the database started
