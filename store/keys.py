"""API keys: only a hash of the secret is stored; the secret is shown once, at creation."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from pymongo.asynchronous.database import AsyncDatabase

PREFIX = "kix"


class Scope(str, Enum):
    reader = "reader"
    partner = "partner"
    runner = "runner"
    maintainer = "maintainer"


@dataclass(frozen=True)
class ApiKey:
    id: str
    name: str
    scope: Scope
    public_key_pem: str | None  # ed25519, for runners (results) and partners (reproductions)
    signing_keyid: str | None


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _of(doc: dict) -> ApiKey:
    return ApiKey(doc["_id"], doc["name"], Scope(doc["scope"]), doc.get("publicKey"), doc.get("signingKeyId"))


async def create_key(
    db: AsyncDatabase, *, name: str, scope: Scope, public_key_pem: str | None = None, signing_keyid: str | None = None
) -> tuple[ApiKey, str]:
    """Returns the key and its secret (`kix_<id>_<random>`); the secret is not stored."""
    key_id = secrets.token_hex(6)
    secret = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(24)}"
    doc = {
        "_id": key_id,
        "name": name,
        "scope": scope.value,
        "hash": _hash(secret),
        "publicKey": public_key_pem,
        "signingKeyId": signing_keyid,
        "createdAt": datetime.now(UTC),
        "revoked": False,
    }
    await db.api_keys.insert_one(doc)
    return _of(doc), secret


async def authenticate(db: AsyncDatabase, secret: str) -> ApiKey | None:
    parts = secret.split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX:
        return None
    doc = await db.api_keys.find_one({"_id": parts[1], "revoked": False})
    if doc is None or not hmac.compare_digest(doc["hash"], _hash(secret)):
        return None
    return _of(doc)


async def is_active(db: AsyncDatabase, key_id: str) -> bool:
    """Whether the key exists and is not revoked (re-checked on long-lived connections)."""
    return await db.api_keys.find_one({"_id": key_id, "revoked": False}, {"_id": 1}) is not None


async def keys_with_signing_key(db: AsyncDatabase, scope: Scope) -> list[ApiKey]:
    return [_of(d) async for d in db.api_keys.find({"scope": scope.value, "revoked": False, "publicKey": {"$ne": None}})]


async def list_keys(db: AsyncDatabase) -> list[dict]:
    return await db.api_keys.find({}, {"hash": 0}).sort("createdAt", 1).to_list()


async def revoke(db: AsyncDatabase, key_id: str) -> bool:
    result = await db.api_keys.update_one({"_id": key_id}, {"$set": {"revoked": True}})
    return result.matched_count == 1
