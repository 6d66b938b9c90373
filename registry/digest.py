"""Content addresses: sha256 over the RFC 8785 canonical JSON of {apiVersion, kind, spec}."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

from registry.manifests import Manifest


def canonical_json(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes: sorted keys, no whitespace, ECMAScript number formatting."""
    return rfc8785.dumps(value)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_of(value: Any) -> str:
    """Digest of any JSON value (used for comparison keys and snapshots)."""
    return sha256_digest(canonical_json(value))


def manifest_digest(manifest: Manifest) -> str:
    """The identity of a manifest. Metadata (names, titles, labels) never changes it."""
    return digest_of(manifest.identity())
