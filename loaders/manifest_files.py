"""Reading manifests from JSON or YAML files, with errors that name the file and field.

Hostile files are refused with a reason, never a traceback: not UTF-8, larger than
MAX_FILE_BYTES, nested past the parser's stack, or YAML whose aliases expand to more than
MAX_YAML_NODES nodes (a "billion laughs" file is tiny and expands to gigabytes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from registry.manifests import Manifest, ManifestError, parse_manifest

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_YAML_NODES = 1_000_000


def _expanded_nodes_within(node: yaml.Node, budget: int) -> bool:
    """Whether the document, with every alias expanded, has at most `budget` nodes. Aliases are
    shared node objects, so counting visits (not nodes) counts the expansion; it stops at the
    budget, so a bomb (or a recursive alias) is refused after `budget` steps."""
    stack = [node]
    seen = 0
    while stack:
        current = stack.pop()
        seen += 1
        if seen > budget:
            return False
        if isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.append(key)
                stack.append(value)
    return True


def _yaml_documents(text: str) -> list[Any]:
    loader = yaml.SafeLoader(text)
    try:
        documents = []
        budget = MAX_YAML_NODES
        while loader.check_node():
            node = loader.get_node()
            if not _expanded_nodes_within(node, budget):
                raise ValueError(f"its aliases expand to more than {MAX_YAML_NODES:,} nodes")
            documents.append(loader.construct_document(node))
        return documents
    finally:
        loader.dispose()


def read_manifests(path: Path) -> list[Manifest]:
    """A file holds one manifest, a list of them, or (YAML) several documents."""
    kind = "YAML" if path.suffix.lower() in {".yaml", ".yml"} else "JSON"
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ManifestError([(str(path), f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; split it into several files")])
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ManifestError([(str(path), f"not UTF-8: byte 0x{error.object[error.start]:02x} at offset {error.start}")]) from None
    try:
        items = [doc for doc in _yaml_documents(text) if doc is not None] if kind == "YAML" else [json.loads(text)]
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ManifestError([(str(path), f"not valid {kind}: {error}")]) from None
    except RecursionError:
        raise ManifestError([(str(path), f"not accepted: {kind} nested too deeply")]) from None
    except ValueError as error:
        raise ManifestError([(str(path), f"not accepted: {error}")]) from None
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
