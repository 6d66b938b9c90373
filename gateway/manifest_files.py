"""Reading manifests from JSON or YAML files, with errors that name the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from registry.manifests import Manifest, ManifestError, parse_manifest


def read_manifests(path: Path) -> list[Manifest]:
    """A file holds one manifest, a list of them, or (YAML) several documents."""
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() in {".yaml", ".yml"}:
            items = [doc for doc in yaml.safe_load_all(text) if doc is not None]
        else:
            items = [json.loads(text)]
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ManifestError([(str(path), f"not valid {path.suffix.lstrip('.').upper() or 'JSON'}: {error}")]) from None
    flat = []
    for item in items:
        flat.extend(item if isinstance(item, list) else [item])
    manifests, problems = [], []
    for index, item in enumerate(flat):
        where = f"{path}[{index}]" if len(flat) > 1 else str(path)
        try:
            manifest = parse_manifest(item)
        except ManifestError as error:
            problems += [(f"{where}: {field}" if field else where, reason) for field, reason in error.problems]
            continue
        if manifest.kind == "Attestation":
            problems.append((where, "Attestation manifests are submitted signed (kernelindex attest), not loaded"))
            continue
        manifests.append(manifest)
    if problems:
        raise ManifestError(problems)
    return manifests
