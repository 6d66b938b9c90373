"""Code identity: how an ImplementationRevision's `code.digest` is computed from its source files,
and the pins that trace a digest to a commit of the repository.

A digest covers the bytes of every source file (by repository-relative path), the entry point and
the variant (e.g. a mode); it never covers a commit, so moving or rebasing code does not change
it. A pin says where those bytes are in git: (repository, commit, paths). New revisions carry the
commit in `code.commit`; revisions published before that have theirs in a pins file, keyed by
digest, because a published manifest never changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import Field, TypeAdapter, ValidationError

from registry.digest import digest_of
from registry.manifests import Digest, Strict

# The name new manifests give this repository in `code.repository`.
REPOSITORY = "kernelindex"
_DIGEST = TypeAdapter(Digest)


def code_digest(files: Mapping[str, bytes], entry_point: str, variant: Mapping[str, Any]) -> str:
    """`files`: repository-relative path -> bytes, for every path the revision's code covers."""
    hashes = {path: "sha256:" + hashlib.sha256(data).hexdigest() for path, data in files.items()}
    return digest_of({"files": hashes, "entryPoint": entry_point, "variant": dict(variant)})


class CodePin(Strict):
    """Where the code behind one digest lives: enough to recompute the digest from git."""

    repository: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    paths: list[str] = Field(min_length=1)
    entryPoint: str
    variant: dict[str, Any] = Field(default_factory=dict)
    note: str | None = None


class PinsError(ValueError):
    pass


def parse_pins(data: Any) -> dict[str, CodePin]:
    """A pins file: {"pins": {digest: CodePin}} (other top-level keys are comments)."""
    pins = data.get("pins") if isinstance(data, dict) else None
    if not isinstance(pins, dict):
        raise PinsError("pins: must be an object keyed by code digest")
    parsed = {}
    for digest, pin in pins.items():
        try:
            _DIGEST.validate_python(digest)
            parsed[digest] = CodePin.model_validate(pin)
        except (ValidationError, ValueError) as error:
            raise PinsError(f"pins.{digest}: {error}") from None
    return parsed
