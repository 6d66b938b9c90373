"""The harness's objects in the KernelIndex v1alpha1 format (registry/controlled_format.py): the
operation, the workload suite, the protocol, the environment and each implementation revision, as
`kernelindex bench` writes them and the runner checks a job's digests against them. Each is the
re-expression of what the harness describes, so a revision re-expressed from the older dialect
(data/controlled) and the same revision described today have one digest."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from registry import controlled_format as fmt
from registry.format import FormatManifest, make_format_manifest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _manifest(data: dict[str, Any]) -> FormatManifest:
    return make_format_manifest(data["kind"], data["metadata"], data["spec"])


@functools.cache
def code_pins() -> dict[str, Any]:
    """data/code-pins.json: the commits of revisions published before manifests named one."""
    try:
        import kernelindex_data

        path = kernelindex_data.DIRECTORY / "code-pins.json"
    except ImportError:
        path = REPO_ROOT / "data" / "code-pins.json"
    return json.loads(path.read_text())["pins"] if path.is_file() else {}


def operation(op: Any) -> FormatManifest:
    from kernels.harness.report import definition_manifest

    return _manifest(fmt.operation(definition_manifest(op).to_json()))


def suite(op: Any, shapes: list[tuple[int, int]], small: bool) -> FormatManifest:
    from kernels.harness.report import definition_manifest, workload_manifest
    from registry.digest import manifest_digest
    from registry.format import format_digest

    older = workload_manifest(op, shapes, manifest_digest(definition_manifest(op)), small)
    return _manifest(fmt.suite(older.to_json(), format_digest(operation(op))))


def protocol(settings: Any) -> FormatManifest:
    from kernels.harness.protocol import protocol_manifest

    return _manifest(fmt.protocol(protocol_manifest(settings).to_json()))


def environment(device: str) -> tuple[FormatManifest, str | None]:
    """The environment, and the OS string the run records as its label (not in the environment)."""
    from kernels.harness.environment import environment_manifest

    older = environment_manifest(device).to_json()
    return _manifest(fmt.environment(older)), (older["spec"].get("software") or {}).get("os")


def implementation(op: Any, impl: Any) -> FormatManifest:
    from kernels.harness.report import definition_manifest
    from registry.digest import manifest_digest
    from registry.format import format_digest

    older = impl.manifest(manifest_digest(definition_manifest(op))).to_json()
    return _manifest(fmt.implementation(older, format_digest(operation(op)), code_pins()))
