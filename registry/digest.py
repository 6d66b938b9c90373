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


# Manifests are frozen: the digest of one object never changes. A loader digests a manifest to
# reference it and `publish` digests it again; remember the most recent ones by identity (the
# object is held, so its id is not reused while it is here).
_RECENT: dict[int, tuple[Manifest, str]] = {}
_RECENT_MAX = 16_384


def manifest_digest(manifest: Manifest) -> str:
    """The identity of a manifest. Metadata (names, titles, labels) never changes it."""
    hit = _RECENT.get(id(manifest))
    if hit is not None and hit[0] is manifest:
        return hit[1]
    digest = digest_of(manifest.identity())
    if len(_RECENT) >= _RECENT_MAX:
        _RECENT.clear()
    _RECENT[id(manifest)] = (manifest, digest)
    return digest
