"""Helpers for partner tests: a published run, partner keys, signed reproductions."""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import REPRODUCTION_PREDICATE, sign_envelope, statement_bytes
from resolvers import ids
from store.keys import Scope
from store.publish import publish
from tests import factories
from tests.jobs.support import bearer, key

__all__ = ["bearer", "key", "published_run", "predicate", "envelope", "SUBMIT", "ADD_NOTE", "RUN_EVIDENCE"]


async def published_run(db, external_id: str = "r1") -> dict[str, Any]:
    outcome = await publish(db, factories.run_bundle(external_id))
    doc = await db.runs.find_one({"_id": outcome.run_digest})
    return {"digest": doc["_id"], "id": ids.encode("Run", doc["_id"]), "name": doc["metadata"]["name"], "level": doc["evidenceLevel"]}


def predicate(**overrides) -> dict[str, Any]:
    value = {
        "protocol": {"name": "partner-harness", "version": "2.1", "timer": "cuda_events"},
        "environment": {"gpu": "NVIDIA B200", "architecture": "sm_100", "driver": "580.65", "cuda": "13.0", "libraries": {"torch": "2.11"}},
        "cases": [{"index": 0, "latencyNs": 101_000}, {"index": 1, "latencyNs": 99_500, "samplesNs": [99_000, 99_500, 100_100]}],
        "aggregate": {"statistic": "median", "valueNs": 100_250},
        "measuredAt": "2026-12-01T10:00:00Z",
    }
    value.update(overrides)
    return value


def envelope(
    signer: Ed25519PrivateKey,
    subject_digest: str,
    pred: dict | None = None,
    *,
    predicate_type: str = REPRODUCTION_PREDICATE,
    payload_type: str | None = None,
) -> str:
    payload = statement_bytes("synthetic-run", subject_digest, predicate_type, pred if pred is not None else predicate())
    signed = sign_envelope(payload, signer) if payload_type is None else sign_envelope(payload, signer, payload_type)
    return json.dumps(signed)


async def partner(db, name: str = "partner-lab") -> tuple[Ed25519PrivateKey, str]:
    signer = Ed25519PrivateKey.generate()
    return signer, await key(db, Scope.partner, signer, name=name)


SUBMIT = """mutation($run: ID!, $envelope: String!) { runSubmitReproduction(input: {run: $run, envelope: $envelope}) {
  created attestation { id digest subjectDigest predicateType author keyId verified measurement }
  run { digest evidenceLevel } userErrors { field message code } } }"""
ADD_NOTE = """mutation($run: ID!, $text: String!) { runAddNote(input: {run: $run, text: $text}) {
  note { id text author authorScope } run { digest } userErrors { field message code } } }"""
RUN_EVIDENCE = """query($id: ID!) { run(id: $id) { evidenceLevel
  attestations { edges { cursor node { digest author keyId verified measurement } } pageInfo { hasNextPage } }
  notes { edges { cursor node { text author authorScope } } pageInfo { hasNextPage } } } }"""
