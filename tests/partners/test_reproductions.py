"""runSubmitReproduction: signed partner reproductions, verified, stored, never changing a level."""

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import MAX_ENVELOPE_BYTES, REPRODUCTION_PREDICATE
from resolvers import ids
from store.keys import Scope
from tests.partners import support
from tests.partners.support import SUBMIT, bearer


async def _nothing_stored(db):
    assert await db.attestations.count_documents({}) == 0
    assert await db.events.count_documents({"type": "run.attested"}) == 0


async def test_a_signed_reproduction_is_verified_stored_and_listed(api, db):
    run = await support.published_run(db)
    signer, secret = await support.partner(db)
    answer = (await api.data(SUBMIT, {"run": run["id"], "envelope": support.envelope(signer, run["digest"])}, bearer(secret)))[
        "runSubmitReproduction"
    ]
    assert answer["userErrors"] == [] and answer["created"] is True
    attestation = answer["attestation"]
    assert attestation["subjectDigest"] == run["digest"]
    assert attestation["predicateType"] == REPRODUCTION_PREDICATE
    assert attestation["author"] == "partner-lab" and attestation["verified"] is True
    assert attestation["measurement"]["aggregate"] == {"statistic": "median", "valueNs": 100250}
    assert attestation["measurement"]["cases"][1]["samplesNs"] == [99000, 99500, 100100]

    # Listed with the run; the run's evidence level is what it was.
    data = (await api.data(support.RUN_EVIDENCE, {"id": run["id"]}))["run"]
    assert [e["node"]["digest"] for e in data["attestations"]["edges"]] == [attestation["digest"]]
    assert data["evidenceLevel"] == "REPORTED" == answer["run"]["evidenceLevel"]
    assert (await db.runs.find_one({"_id": run["digest"]}))["evidenceLevel"] == run["level"]
    assert data["notes"]["edges"] == []  # reproductions and notes are shown apart

    # Stored as an Attestation manifest, with an event in the log.
    doc = await db.attestations.find_one({})
    assert doc["kind"] == "Attestation" and doc["spec"]["author"]["keyId"] == attestation["keyId"]
    assert set(doc["spec"]["envelope"]) == {"payloadType", "payload", "signatures"}
    event = await db.events.find_one({"type": "run.attested"})
    assert event["runDigest"] == run["digest"] and event["seq"] == doc["seq"]
    node = (await api.data("query($id: ID!) { node(id: $id) { ... on Attestation { digest } } }", {"id": attestation["id"]}))["node"]
    assert node == {"digest": attestation["digest"]}


async def test_the_same_statement_twice_is_one_attestation(api, db):
    run = await support.published_run(db)
    signer, secret = await support.partner(db)
    envelope = support.envelope(signer, run["digest"])
    first = (await api.data(SUBMIT, {"run": run["id"], "envelope": envelope}, bearer(secret)))["runSubmitReproduction"]
    again = (await api.data(SUBMIT, {"run": run["id"], "envelope": envelope}, bearer(secret)))["runSubmitReproduction"]
    assert again["created"] is False and again["attestation"]["digest"] == first["attestation"]["digest"]
    assert await db.attestations.count_documents({}) == 1
    # A second, different reproduction is a second attestation, listed after the first.
    other = support.envelope(signer, run["digest"], support.predicate(aggregate={"statistic": "median", "valueNs": 100_900}))
    second = (await api.data(SUBMIT, {"run": run["id"], "envelope": other}, bearer(secret)))["runSubmitReproduction"]
    assert second["created"] is True
    page = (await api.data(support.RUN_EVIDENCE, {"id": run["id"]}))["run"]["attestations"]["edges"]
    assert [e["node"]["digest"] for e in page] == [first["attestation"]["digest"], second["attestation"]["digest"]]


def _tampered_signature(signer, digest):
    envelope = json.loads(support.envelope(signer, digest))
    envelope["signatures"][0]["sig"] = base64.b64encode(b"\0" * 64).decode()
    return json.dumps(envelope)


def _bad_base64(signer, digest):
    envelope = json.loads(support.envelope(signer, digest))
    envelope["payload"] = "not base64 at all!"
    return json.dumps(envelope)


def _missing(field):
    def make(signer, digest):
        pred = support.predicate()
        del pred[field]
        return support.envelope(signer, digest, pred)

    return make


BAD_ENVELOPES = {
    "malformed envelope (not JSON)": (lambda s, d: '{"payloadType": ', "MALFORMED_ENVELOPE", None),
    "envelope without signatures": (
        lambda s, d: json.dumps({"payloadType": "application/vnd.in-toto+json", "payload": ""}),
        "MALFORMED_ENVELOPE",
        "signatures",
    ),
    "bad base64": (_bad_base64, "BAD_BASE64", "base64"),
    "wrong payloadType": (lambda s, d: support.envelope(s, d, payload_type="application/json"), "WRONG_PAYLOAD_TYPE", "payloadType"),
    "unknown signer": (lambda s, d: support.envelope(Ed25519PrivateKey.generate(), d), "UNKNOWN_SIGNER", "not the key registered"),
    "signature that does not verify": (_tampered_signature, "SIGNATURE_INVALID", None),
    "subject that is not the run": (lambda s, d: support.envelope(s, "sha256:" + "ab" * 32), "SUBJECT_MISMATCH", "not this run's digest"),
    "wrong predicate type": (
        lambda s, d: support.envelope(s, d, predicate_type="https://example.com/other/v1"),
        "WRONG_PREDICATE_TYPE",
        None,
    ),
    "predicate missing a field": (_missing("aggregate"), "INVALID_PREDICATE", "predicate.aggregate: Field required"),
    "predicate with an unknown field": (
        lambda s, d: support.envelope(s, d, support.predicate(extra=1)),
        "INVALID_PREDICATE",
        "predicate.extra: unknown field",
    ),
    "case not in the workload": (
        lambda s, d: support.envelope(s, d, support.predicate(cases=[{"index": 99, "latencyNs": 5}])),
        "INVALID_PREDICATE",
        "index 99 is not a case",
    ),
    "negative latency": (
        lambda s, d: support.envelope(s, d, support.predicate(cases=[{"index": 0, "latencyNs": -5}])),
        "INVALID_PREDICATE",
        "predicate.cases.0.latencyNs",
    ),
    "oversized envelope (not even JSON)": (lambda s, d: "x" * (MAX_ENVELOPE_BYTES + 1), "ENVELOPE_TOO_LARGE", None),
}


@pytest.mark.parametrize("case", list(BAD_ENVELOPES))
async def test_bad_envelopes_are_refused_with_a_code_and_nothing_is_stored(api, db, case):
    make, code, words = BAD_ENVELOPES[case]
    run = await support.published_run(db)
    signer, secret = await support.partner(db)
    answer = (await api.data(SUBMIT, {"run": run["id"], "envelope": make(signer, run["digest"])}, bearer(secret)))["runSubmitReproduction"]
    assert answer["attestation"] is None
    [error] = answer["userErrors"]
    assert error["code"] == code, error
    assert error["field"] == "envelope"
    if words:
        assert words in error["message"], error
    await _nothing_stored(db)


async def test_the_caller_must_be_a_partner_with_a_signing_key(api, db):
    run = await support.published_run(db)
    signer, _ = await support.partner(db)
    envelope = support.envelope(signer, run["digest"])
    variables = {"run": run["id"], "envelope": envelope}
    refusals = {
        "no key": (None, "UNAUTHENTICATED"),
        "bad key": ("kix_nothere_secret", "UNAUTHENTICATED"),
        "reader": (await support.key(db, Scope.reader), "FORBIDDEN"),
        "maintainer": (await support.key(db, Scope.maintainer), "FORBIDDEN"),
        "partner without a public key": (await support.key(db, Scope.partner), "UNKNOWN_SIGNER"),
    }
    for label, (secret, code) in refusals.items():
        answer = (await api.data(SUBMIT, variables, bearer(secret) if secret else None))["runSubmitReproduction"]
        assert [e["code"] for e in answer["userErrors"]] == [code], label
    await _nothing_stored(db)


async def test_the_run_must_exist(api, db):
    signer, secret = await support.partner(db)
    digest = "sha256:" + "cd" * 32
    for run_id, code in ((ids.encode("Run", digest), "NOT_FOUND"), ("nonsense", "BAD_ID"), (ids.encode("Definition", digest), "BAD_ID")):
        answer = (await api.data(SUBMIT, {"run": run_id, "envelope": support.envelope(signer, digest)}, bearer(secret)))[
            "runSubmitReproduction"
        ]
        assert [(e["code"], e["field"]) for e in answer["userErrors"]] == [(code, "run")]
    await _nothing_stored(db)


async def test_reproductions_by_several_partners_never_change_the_level(api, db):
    """A reproduction is community evidence: even several independent ones (the same statement,
    signed by three partners) never lift a Reported run; only a controlled rerun does."""
    run = await support.published_run(db)
    for name in ("lab-a", "lab-b", "lab-c"):
        signer, secret = await support.partner(db, name)
        answer = await api.data(SUBMIT, {"run": run["id"], "envelope": support.envelope(signer, run["digest"])}, bearer(secret))
        assert answer["runSubmitReproduction"]["userErrors"] == []
    assert (await db.runs.find_one({"_id": run["digest"]}))["evidenceLevel"] == run["level"] == "Reported"
    assert await db.attestations.count_documents({}) == 3


async def test_a_reproduction_of_a_verified_run_leaves_it_verified(api, db):
    from tests.jobs import support as jobs

    objects = await jobs.registry_with_controlled_definition(db)
    maintainer = await jobs.key(db, Scope.maintainer)
    job = (await jobs.request(api, maintainer, objects))["job"]
    runner_signer = Ed25519PrivateKey.generate()
    runner = await jobs.key(db, Scope.runner, runner_signer)
    await jobs.claim(api, runner)
    job_doc = await db.jobs.find_one({"_id": ids.decode_as(job["id"], "BenchmarkJob")})
    done = await jobs.complete(api, runner, job["id"], jobs.signed_result(job_doc, runner_signer))
    digest = done["run"]["digest"]
    assert done["run"]["evidenceLevel"] == "KERNELINDEX_VERIFIED"

    signer, secret = await support.partner(db)
    pred = support.predicate(environment={"gpu": "NVIDIA H200", "architecture": "sm_90"}, cases=[{"index": 0, "latencyNs": 21_000}])
    answer = await api.data(SUBMIT, {"run": ids.encode("Run", digest), "envelope": support.envelope(signer, digest, pred)}, bearer(secret))
    assert answer["runSubmitReproduction"]["userErrors"] == []
    assert answer["runSubmitReproduction"]["run"]["evidenceLevel"] == "KERNELINDEX_VERIFIED"
    assert (await db.runs.find_one({"_id": digest}))["evidenceLevel"] == "KernelIndex Verified"
