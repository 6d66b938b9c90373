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


class _ManifestLoader(yaml.SafeLoader):
    """YAML as the format reads it (upstream: YAML 1.2 core schema, unique keys): a duplicate
    key is refused, not silently overwritten, and `2026-08-01T12:00:00Z` stays the text it is
    (YAML 1.1's timestamp type would turn it into a datetime)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:
                    continue  # an unhashable key: SafeLoader's own error names it
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _yaml_documents(text: str) -> list[Any]:
    loader = _ManifestLoader(text)
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


def read_documents(path: Path) -> list[Any]:
    """The documents of a manifest file, parsed but not yet validated: one manifest, a list of
    them, or (YAML) several documents; ManifestError when the file cannot be read."""
    kind = "YAML" if path.suffix.lower() in {".yaml", ".yml"} else "JSON"
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ManifestError([(str(path), f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; split it into several files")])
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ManifestError([(str(path), f"not UTF-8: byte 0x{error.object[error.start]:02x} at offset {error.start}")]) from None
    try:
        items = (
            [doc for doc in _yaml_documents(text) if doc is not None]
            if kind == "YAML"
            else [json.loads(text, object_pairs_hook=_unique_keys)]
        )
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ManifestError([(str(path), f"not valid {kind}: {error}")]) from None
    except RecursionError:
        raise ManifestError([(str(path), f"not accepted: {kind} nested too deeply")]) from None
    except ValueError as error:
        raise ManifestError([(str(path), f"not accepted: {error}")]) from None
    flat = []
    for item in items:
        flat.extend(item if isinstance(item, list) else [item])
    return flat


def read_manifests(path: Path) -> list[Manifest]:
    """A file holds one manifest, a list of them, or (YAML) several documents."""
    flat = read_documents(path)
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
