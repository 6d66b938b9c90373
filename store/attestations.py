"""Partner reproductions: verify a signed in-toto statement about a run and keep it as an
`Attestation` manifest. A reproduction is shown with the run and never changes its evidence level.

Checked in this order, each failure a coded error and nothing written: the envelope's size (before
it is parsed); its shape; the signer (a key registered to the caller's API key); the ed25519
signature; the in-toto statement and its predicate type; the subject (the run's digest); the
predicate's schema; its case indexes against the run's workload.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from registry.digest import manifest_digest
from registry.dsse import (
    REPRODUCTION_PREDICATE,
    SignatureError,
    load_public_key,
    parse_envelope_text,
    parse_statement,
    verify_envelope,
)
from registry.manifests import make_manifest
from registry.reproduction import PredicateError, parse_predicate
from store import events
from store.keys import ApiKey
from store.publish import manifest_document
from store.transactions import in_transaction

EVENT_TYPE = "run.attested"


class AttestationError(Exception):
    def __init__(self, code: str, message: str, field: str = "envelope"):
        super().__init__(message)
        self.code = code
        self.field = field


def _check_signer(envelope: dict[str, Any], key: ApiKey) -> None:
    """Name an unknown signer before trying signatures: every keyid given is someone else's."""
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        return  # verify_envelope reports the malformed list
    named = [s.get("keyid") for s in signatures if isinstance(s, dict) and s.get("keyid")]
    if named and len(named) == len(signatures) and key.signing_keyid not in named:
        raise AttestationError(
            "UNKNOWN_SIGNER", f"signed by key {named[0]}, which is not the key registered to this API key ({key.signing_keyid})"
        )


def verify_reproduction(envelope_text: str, key: ApiKey, run_digest: str) -> tuple[dict[str, Any], bytes, str, dict[str, Any]]:
    """(envelope, payload, signer keyid, predicate as JSON); AttestationError when refused."""
    try:
        envelope = parse_envelope_text(envelope_text)
        if not key.public_key_pem or not key.signing_keyid:
            raise AttestationError(
                "UNKNOWN_SIGNER", "this API key has no registered signing key (kernelindex keys create --public-key FILE)"
            )
        _check_signer(envelope, key)
        payload, signer = verify_envelope(envelope, {key.signing_keyid: load_public_key(key.public_key_pem)})
        statement = parse_statement(payload, REPRODUCTION_PREDICATE)
    except SignatureError as error:
        raise AttestationError(error.code, str(error)) from None
    if statement.subject_digest != run_digest:
        raise AttestationError(
            "SUBJECT_MISMATCH", f"the statement's subject is {statement.subject_digest}, not this run's digest {run_digest}"
        )
    try:
        predicate = parse_predicate(statement.predicate)
    except PredicateError as error:
        raise AttestationError("INVALID_PREDICATE", str(error)) from None
    return envelope, payload, signer, predicate.to_json()


def _normalized(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope's DSSE fields only: what was verified, and nothing else a client sent."""
    return {
        "payloadType": envelope["payloadType"],
        "payload": envelope["payload"],
        "signatures": [
            {k: str(s[k]) for k in ("keyid", "sig") if s.get(k) is not None} for s in envelope["signatures"] if isinstance(s, dict)
        ],
    }


async def submit_reproduction(db: AsyncDatabase, *, run: dict[str, Any], key: ApiKey, envelope_text: str) -> tuple[dict[str, Any], bool]:
    """Verify and store; returns (attestation document, created). The same signed statement
    submitted again by the same partner is the same attestation (nothing new is written)."""
    envelope, payload, signer, measurement = verify_reproduction(envelope_text, key, run["_id"])
    workload = await db.workloads.find_one({"_id": run["spec"]["workloadDigest"]}, {"spec.cases": 1})
    if workload is not None:
        # Our suites number their cases; a v1alpha1 suite's cases are numbered by position, and a
        # WorkloadCase is its own one case (as resolvers/v1alpha1.workload_cases reads them).
        cases = workload.get("spec", {}).get("cases")
        known = {c.get("index", position) for position, c in enumerate(cases)} if cases is not None else {0}
        unknown = sorted({c["index"] for c in measurement["cases"]} - known)
        if unknown:
            raise AttestationError("INVALID_PREDICATE", f"predicate.cases: index {unknown[0]} is not a case of the run's workload")

    payload_digest = "sha256:" + hashlib.sha256(payload).hexdigest()
    same = {"payloadDigest": payload_digest, "spec.subjectDigest": run["_id"], "partnerKeyId": key.id}
    existing = await db.attestations.find_one(same)
    if existing:
        return existing, False

    now = datetime.now(UTC)
    manifest = make_manifest(
        "Attestation",
        f"reproduction-{key.id}-{payload_digest[7:19]}",
        {
            "subjectDigest": run["_id"],
            "predicateType": REPRODUCTION_PREDICATE,
            "author": {"name": key.name, "keyId": signer},
            "verified": True,
            "attestedAt": now.isoformat().replace("+00:00", "Z"),
            "measurement": measurement,
            "envelope": _normalized(envelope),
        },
        title=f"Reproduction by {key.name}",
    )
    digest = manifest_digest(manifest)

    async def write(session: AsyncClientSession) -> tuple[dict[str, Any], bool]:
        # Read again inside the transaction: a concurrent submission of the same statement may
        # have committed since (a conflict with it is retried by in_transaction).
        stored = await db.attestations.find_one(same, session=session)
        if stored:
            return stored, False
        seq = await events.reserve(db, 1, session)
        doc = {**manifest_document(manifest, digest, now), "seq": seq, "payloadDigest": payload_digest, "partnerKeyId": key.id}
        event = events.event_document(seq, EVENT_TYPE, now, runDigest=run["_id"], attestationDigest=digest, author=key.name)
        await db.attestations.insert_one(doc, session=session)
        await db.events.insert_one(event, session=session)
        return doc, True

    try:
        return await in_transaction(db, write)
    except DuplicateKeyError:  # the same statement, committed by a concurrent submission
        existing = await db.attestations.find_one(same)
        if existing is None:
            raise
        return existing, False
