"""Re-express our controlled evidence of the older dialect in the KernelIndex v1alpha1 format.

    python -m kernels.harness.reexpress [DATA_DIR]

Rewrites DATA_DIR/controlled/*/manifests.json (the harness's runs of the older dialect) in the
format (registry/controlled_format.py), with each run's raw.json and cli.log named by uri and
sha256; and writes DATA_DIR/controlled/h200-verified-reruns/manifests.json: the runs of the signed
results in DATA_DIR/verified/ (their envelopes, kept as they are, sign the older digests), each
naming its envelope and runner log the same way. A manifests.json already in the format is left
alone, so running it twice changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from registry.controlled_format import old_digest, reexpress

VERIFIED_RERUNS = "h200-verified-reruns"


def _file_ref(path: Path, base: Path) -> dict[str, str] | None:
    if not path.is_file():
        return None
    return {
        "uri": path.relative_to(base).as_posix() if path.is_relative_to(base) else _relative(path, base),
        "digest": "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest(),
    }


def _relative(path: Path, base: Path) -> str:
    up = 0
    while not path.is_relative_to(base):
        base, up = base.parent, up + 1
    return "../" * up + path.relative_to(base).as_posix()


def _is_older(manifests: list[dict[str, Any]]) -> bool:
    return any(m["kind"] == "BenchmarkRun" and "cases" in m["spec"] for m in manifests) or any(
        m["kind"] == "BenchmarkProtocol" and "rounds" in (m["spec"].get("correctness") or {}) for m in manifests
    )


def _write(path: Path, manifests: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifests, indent=1, ensure_ascii=False) + "\n")


def _pin_older_revisions(data_dir: Path, manifests, pins: dict[str, Any]) -> None:
    """The format's ImplementationRevision names its code by digest, commit and callable, not by
    the files the digest covers: a revision whose older manifest named them (code.paths) gets a
    pin in data/code-pins.json, as revisions published before manifests named a commit have."""
    added = 0
    for m in manifests:
        code = m["spec"].get("code") or {} if m["kind"] == "ImplementationRevision" else {}
        if code.get("commit") and code.get("paths") and code["digest"] not in pins:
            pins[code["digest"]] = {
                "repository": code.get("repository", "kernelindex"),
                "commit": code["commit"],
                "paths": code["paths"],
                "entryPoint": code["entryPoint"],
                **({"variant": code["variant"]} if code.get("variant") else {}),
                "note": m["metadata"]["name"],
            }
            added += 1
    if added:
        path = data_dir / "code-pins.json"
        document = json.loads(path.read_text())
        document["pins"] = pins
        path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
        print(f"{path}: {added} revisions pinned (their older manifests named their files)")


def main(data_dir: Path) -> int:
    pins = json.loads((data_dir / "code-pins.json").read_text())["pins"]
    every: dict[str, dict[str, Any]] = {}
    older: dict[Path, list[dict[str, Any]]] = {}
    for path in sorted((data_dir / "controlled").glob("*/manifests.json")):
        manifests = json.loads(path.read_text())
        if _is_older(manifests):
            older[path] = manifests
            every |= {old_digest(m): m for m in manifests}
    _pin_older_revisions(data_dir, every.values(), pins)
    for path, manifests in older.items():
        folder = path.parent
        new = reexpress(
            manifests,
            pins=pins,
            raw_samples=_file_ref(folder / "raw.json", folder),
            logs=_file_ref(folder / "cli.log", folder),
            objects=every,
        )
        _write(path, new)
        print(f"{path}: {len(manifests)} manifests → {len(new)} in the format")
    reruns: list[dict[str, Any]] = []
    target = data_dir / "controlled" / VERIFIED_RERUNS / "manifests.json"
    for path in sorted((data_dir / "verified").glob("*.json")):
        envelope = json.loads(path.read_text())["envelope"]
        statement = json.loads(base64.b64decode(envelope["payload"]))
        manifests = statement["predicate"]["manifests"]
        if not _is_older(manifests) or not every:  # re-expressed already (with the objects it names)
            continue
        log = path.with_name(path.stem + ".runner.log")
        reruns += reexpress(
            manifests,
            pins=pins,
            raw_samples=_file_ref(path, target.parent),
            logs=_file_ref(log, target.parent),
            objects=every,
        )
    if reruns:
        unique = {json.dumps(m, sort_keys=True): m for m in reruns}
        _write(target, list(unique.values()))
        print(f"{target}: {sum(1 for m in unique.values() if m['kind'] == 'BenchmarkRun')} runs of signed results re-expressed")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "data"))
