"""Signed statements: in-toto Statement v1 inside a DSSE envelope, signed with ed25519.

DSSE signs PAE(payloadType, payload), never the JSON as re-serialized, so what was signed is
exactly the bytes carried in the envelope. A key is named by its `keyid`: the sha256 of its raw
32-byte public key, in hex.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
BENCHMARK_RUN_PREDICATE = "https://kernelindex.dev/attestation/benchmark-run/v1"
REPRODUCTION_PREDICATE = "https://kernelindex.dev/attestation/reproduction/v1"
MAX_ENVELOPE_BYTES = 512 * 1024


class SignatureError(ValueError):
    """Why an envelope or statement was refused; `code` is what the API reports."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- keys


def keyid(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def load_public_key(pem: bytes | str) -> Ed25519PublicKey:
    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise SignatureError("BAD_PUBLIC_KEY", "not a PEM-encoded public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SignatureError("BAD_PUBLIC_KEY", "the public key must be an ed25519 key")
    return key


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError("BAD_PRIVATE_KEY", "the signing key must be an ed25519 key")
    return key


def public_pem(public_key: Ed25519PublicKey) -> str:
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def private_pem(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


# ---------------------------------------------------------------- DSSE


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    type_bytes = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(type_bytes), type_bytes, len(payload), payload)


def sign_envelope(payload: bytes, private_key: Ed25519PrivateKey, payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> dict[str, Any]:
    signature = private_key.sign(pae(payload_type, payload))
    return {
        "payloadType": payload_type,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": keyid(private_key.public_key()), "sig": base64.b64encode(signature).decode()}],
    }


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise SignatureError("MALFORMED_ENVELOPE", f"{what} must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError("BAD_BASE64", f"{what} is not valid base64") from None


def parse_envelope_text(text: str) -> dict[str, Any]:
    """Size first, then JSON: an oversized envelope is refused before it is parsed."""
    if len(text.encode()) > MAX_ENVELOPE_BYTES:
        raise SignatureError("ENVELOPE_TOO_LARGE", f"the envelope is larger than {MAX_ENVELOPE_BYTES} bytes")
    try:
        envelope = json.loads(text)
    except json.JSONDecodeError as error:
        raise SignatureError("MALFORMED_ENVELOPE", f"the envelope is not JSON: {error.msg}") from None
    if not isinstance(envelope, dict):
        raise SignatureError("MALFORMED_ENVELOPE", "the envelope must be a JSON object")
    return envelope


def verify_envelope(
    envelope: dict[str, Any], trusted: dict[str, Ed25519PublicKey], payload_type: str = IN_TOTO_PAYLOAD_TYPE
) -> tuple[bytes, str]:
    """Return (payload, keyid of the signer) when a signature by one of `trusted` verifies."""
    for field in ("payloadType", "payload", "signatures"):
        if field not in envelope:
            raise SignatureError("MALFORMED_ENVELOPE", f"the envelope has no {field}")
    if envelope["payloadType"] != payload_type:
        raise SignatureError("WRONG_PAYLOAD_TYPE", f"payloadType must be {payload_type}")
    payload = _b64(envelope["payload"], "payload")
    signatures = envelope["signatures"]
    if not isinstance(signatures, list) or not signatures:
        raise SignatureError("MALFORMED_ENVELOPE", "signatures must be a non-empty list")
    message = pae(payload_type, payload)
    for entry in signatures:
        if not isinstance(entry, dict):
            raise SignatureError("MALFORMED_ENVELOPE", "each signature must be an object")
        signature = _b64(entry.get("sig"), "signature")
        for kid, key in trusted.items():
            if entry.get("keyid") not in (None, "", kid):
                continue
            try:
                key.verify(signature, message)
            except InvalidSignature:
                continue
            return payload, kid
    raise SignatureError("SIGNATURE_INVALID", "no signature verifies against a key registered to you")


# ---------------------------------------------------------------- in-toto Statement v1


@dataclass(frozen=True)
class Statement:
    subject_name: str
    subject_digest: str  # "sha256:<hex>"
    predicate_type: str
    predicate: dict[str, Any]


def statement_bytes(subject_name: str, subject_digest: str, predicate_type: str, predicate: dict[str, Any]) -> bytes:
    algorithm, _, hex_value = subject_digest.partition(":")
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {algorithm: hex_value}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    return json.dumps(statement, separators=(",", ":"), sort_keys=True).encode()


def parse_statement(payload: bytes, predicate_type: str) -> Statement:
    try:
        data = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise SignatureError("MALFORMED_STATEMENT", "the payload is not a JSON in-toto statement") from None
    if not isinstance(data, dict) or data.get("_type") != STATEMENT_TYPE:
        raise SignatureError("MALFORMED_STATEMENT", f"_type must be {STATEMENT_TYPE}")
    if data.get("predicateType") != predicate_type:
        raise SignatureError("WRONG_PREDICATE_TYPE", f"predicateType must be {predicate_type}")
    subjects = data.get("subject")
    if not isinstance(subjects, list) or len(subjects) != 1 or not isinstance(subjects[0], dict):
        raise SignatureError("MALFORMED_STATEMENT", "the statement must have exactly one subject")
    digest = subjects[0].get("digest")
    if not isinstance(digest, dict) or not isinstance(digest.get("sha256"), str):
        raise SignatureError("MALFORMED_STATEMENT", "the subject must carry a sha256 digest")
    predicate = data.get("predicate")
    if not isinstance(predicate, dict):
        raise SignatureError("MALFORMED_STATEMENT", "the predicate must be an object")
    return Statement(
        subject_name=str(subjects[0].get("name", "")),
        subject_digest="sha256:" + digest["sha256"],
        predicate_type=predicate_type,
        predicate=predicate,
    )
