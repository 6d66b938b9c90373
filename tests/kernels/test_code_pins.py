"""Every ImplementationRevision of ours that the bundled data publishes traces to the exact sources
that produced it: a commit of this repository (in data/code-pins.json, or in the manifest's
`code.commit`) whose files, read with `git show COMMIT:PATH`, hash to its `code.digest`. The
working tree is free to change: git keeps the published code."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from registry.code import REPOSITORY, code_digest, parse_pins

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, timeout=60)


def _published() -> dict[str, dict]:
    """code digest -> {digest, commit, entryPoint}, for every revision of ours in data/controlled
    (v1alpha1: source.contentDigest, projectRevision.commit, callable.symbol)."""
    found = {}
    for path in sorted((DATA / "controlled").glob("*/manifests.json")):
        for m in json.loads(path.read_text()):
            if m["kind"] != "ImplementationRevision" or (m["metadata"].get("labels") or {}).get("project") != REPOSITORY:
                continue
            spec = m["spec"]
            digest = spec["source"]["contentDigest"]
            found[digest] = {"digest": digest, "commit": spec["projectRevision"].get("commit"), "entryPoint": spec["callable"]["symbol"]}
    return found


def _pins() -> dict[str, dict]:
    """code digest -> {commit, paths, entryPoint, variant}: the pins file."""
    return {d: p.model_dump() for d, p in parse_pins(json.loads((DATA / "code-pins.json").read_text())).items()}


def _history_or_skip() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the pinned commits cannot be read")
    shallow = _git("rev-parse", "--is-shallow-repository")
    if shallow.returncode != 0:
        pytest.skip("not a git checkout (e.g. a source archive): there is no history to read the pinned commits from")
    if shallow.stdout.strip() == b"true":
        pytest.skip("a shallow clone lacks the pinned commits; run `git fetch --unshallow` to check them")


def _rebuild(pin: dict) -> str:
    """The code digest of the pin's files at its commit (registry/code.py's recipe)."""
    files = {}
    for path in pin["paths"]:
        shown = _git("show", f"{pin['commit']}:{path}")
        assert shown.returncode == 0, f"{path} is not in commit {pin['commit']}: {shown.stderr.decode()[:200]}"
        files[path] = shown.stdout
    return code_digest(files, pin["entryPoint"], pin["variant"])


def test_every_published_revision_of_ours_names_its_commit():
    published, pins = _published(), _pins()
    assert len(published) >= 9  # reference, two compiles, ext (+3 modes), ext-cluster, -streamnorm, -streamk
    for digest, code in published.items():
        assert digest in pins, f"{digest} ({code['entryPoint']}) has no commit: add it to data/code-pins.json"
        assert pins[digest]["entryPoint"] == code["entryPoint"] and pins[digest]["paths"], digest
        assert code["commit"] in (None, pins[digest]["commit"]), digest


@pytest.mark.parametrize("digest", sorted(_pins()))
def test_pinned_commit_holds_the_code_behind_the_digest(digest):
    _history_or_skip()
    pin = _pins()[digest]
    assert _git("cat-file", "-e", f"{pin['commit']}^{{commit}}").returncode == 0, f"{pin['commit']} is not in this repository"
    on_history = _git("merge-base", "--is-ancestor", pin["commit"], "HEAD").returncode == 0
    assert on_history, f"{pin['commit']} is not on this branch's history (a commit from before a rebase?)"
    assert _rebuild(pin) == digest


def test_a_pin_to_another_commit_does_not_check():
    """The check depends on the commit: the first H200 session's torch.compile revision is not the
    code at the commit of the later one (both are pinned)."""
    _history_or_skip()
    pins = _pins()
    first = pins["sha256:215a1e6e7c4212708d4ad685fa24dacd0c8eb256bcc580af325215623c145ccf"]
    later = pins["sha256:a3531c71d52753b0acd4166bf404cf0ff8a1f975dc3609e4c0f700839d92e448"]
    moved = {**first, "commit": later["commit"]}
    assert _rebuild(first) != _rebuild(moved)


def test_a_new_revision_names_the_commit_of_its_files_in_its_manifest():
    """A revision not yet published (here: the reference with another variant) carries its commit,
    paths and variant, and they rebuild its digest; published ones keep their manifests."""
    _history_or_skip()
    import dataclasses

    from kernels.implementations import get

    reference = get("reference")
    if _git("status", "--porcelain", "--", *reference.sources).stdout.strip():
        pytest.skip("the reference's sources are modified in this checkout: no commit holds them")
    new = dataclasses.replace(reference, variant={"mode": "other"})
    code = new.manifest("sha256:" + "d" * 64).spec.code
    assert code.digest == new.code_digest() != reference.code_digest()
    assert code.paths == list(reference.sources) and code.variant == {"mode": "other"}
    last = _git("log", "-1", "--format=%H", "--", *reference.sources).stdout.decode().strip()
    assert code.commit == last
    assert _rebuild({"commit": code.commit, "paths": code.paths, "entryPoint": code.entryPoint, "variant": code.variant}) == code.digest
    assert reference.manifest("sha256:" + "d" * 64).spec.code.commit is None  # published without one


def test_the_working_tree_still_holds_the_code_of_the_published_cpu_revisions():
    """A runner executes its own kernels/ entry only when that entry's files hash to the job's
    code digest, so an implementation that runs on a CPU (what the README's walkthrough asks a
    rerun of, on any machine) must still hash to a published digest in the working tree: the
    layout commit's ruff format of its sources made every such rerun refuse to run ("another
    revision"). GPU-only entries may move on to a new revision (their old code stays in git)."""
    from kernels.implementations import IMPLEMENTATIONS

    published = _published()
    on_cpu = [impl for impl in IMPLEMENTATIONS.values() if "cpu" in impl.devices]
    assert on_cpu, "no implementation runs on a CPU"
    stale = {impl.manifest_name(): impl.code_digest() for impl in on_cpu if impl.code_digest() not in published}
    assert stale == {}, f"these entries no longer hash to any published revision (their sources changed): {stale}"
