"""Benchmark jobs through the GraphQL API: keys, idempotency, claims, signed completion."""

import asyncio
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from asgi_lifespan import LifespanManager
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pymongo.errors import OperationFailure

from registry.dsse import BENCHMARK_RUN_PREDICATE, sign_envelope, statement_bytes
from registry.format import format_digest
from resolvers import ids
from server.app import create_app
from server.settings import Settings
from store.keys import Scope
from tests.conftest import GraphQLClient
from tests.jobs import support
from tests.jobs.support import bearer, claim, complete, request


async def _queued_job(api, db):
    objects = await support.registry_with_controlled_definition(db)
    maintainer = await support.key(db, Scope.maintainer)
    job = (await request(api, maintainer, objects))["job"]
    return objects, maintainer, job


async def test_mutations_need_the_right_key(api, db):
    objects = await support.registry_with_controlled_definition(db)
    payload = {"definition": ids.encode("Definition", "sha256:" + "0" * 64), "implementation": "ext", "gpu": "X", "idempotencyKey": "a"}
    body = await api.data(support.REQUEST, {"input": payload})
    assert body["benchmarkJobRequest"]["userErrors"][0]["code"] == "UNAUTHENTICATED"
    body = await api.data(support.REQUEST, {"input": payload}, bearer("kix_nothere_secret"))
    assert body["benchmarkJobRequest"]["userErrors"][0]["code"] == "UNAUTHENTICATED"
    reader = await support.key(db, Scope.reader)
    body = await api.data(support.REQUEST, {"input": payload}, bearer(reader))
    assert body["benchmarkJobRequest"]["userErrors"][0] == {
        "field": "authorization",
        "message": "a reader key may not do this; it needs a maintainer or partner key",
        "code": "FORBIDDEN",
    }
    partner = await support.key(db, Scope.partner)
    claimed = await claim(api, partner)
    assert claimed["userErrors"][0]["code"] == "FORBIDDEN"
    assert await db.jobs.count_documents({}) == 0
    assert objects  # the registry had a definition all along


async def test_same_idempotency_key_returns_the_same_job(api, db):
    objects, maintainer, first = await _queued_job(api, db)
    again = await request(api, maintainer, objects)
    assert again["job"]["id"] == first["id"] and again["created"] is False and first
    other = await request(api, maintainer, objects, idem="k2")
    assert other["job"]["id"] != first["id"]
    assert await db.jobs.count_documents({}) == 2


async def test_unknown_implementation_is_refused(api, db):
    objects = await support.registry_with_controlled_definition(db)
    maintainer = await support.key(db, Scope.maintainer)
    result = await request(api, maintainer, objects, implementation="rm -rf /")
    assert result["userErrors"][0]["code"] == "UNKNOWN_IMPLEMENTATION" and result["job"] is None
    assert await db.jobs.count_documents({}) == 0


async def test_claim_complete_publishes_a_verified_run(api, db):
    objects, maintainer, job = await _queued_job(api, db)
    signer = Ed25519PrivateKey.generate()
    runner = await support.key(db, Scope.runner, signer)
    claimed = await claim(api, runner)
    assert claimed["job"]["id"] == job["id"] and claimed["job"]["state"] == "claimed"
    document = claimed["job"]["runnerDocument"]
    assert document["implementation"]["name"] == "ext" and document["workload"]["kind"] == "WorkloadSuite"
    # The code the runner must hold, and the commit that holds it (projectRevision.commit).
    assert document["implementation"]["code"] == {"digest": "sha256:" + "c" * 64, "commit": "c" * 40}
    doc = await db.jobs.find_one({"_id": ids.decode_as(job["id"], "BenchmarkJob")})
    done = await complete(api, runner, job["id"], support.signed_result(doc, signer))
    assert done["userErrors"] == []
    assert done["job"]["state"] == "succeeded"
    assert done["run"]["evidenceLevel"] == "KERNELINDEX_VERIFIED"
    history = (await api.data("query($id: ID!) { benchmarkJob(id: $id) { history { state } } }", {"id": job["id"]}))["benchmarkJob"][
        "history"
    ]
    assert [h["state"] for h in history] == ["queued", "claimed", "succeeded"]

    # A second, independent runner verifies the same implementation on the same workload,
    # protocol and GPU: both runs become Independently Replicated.
    second = await request(api, maintainer, objects, idem="k2")
    other_signer = Ed25519PrivateKey.generate()
    other_runner = await support.key(db, Scope.runner, other_signer)
    await claim(api, other_runner)
    doc2 = await db.jobs.find_one({"_id": ids.decode_as(second["job"]["id"], "BenchmarkJob")})
    envelope = support.signed_result(doc2, other_signer, median_ns=21_000, env=support.environment(host="h200-b"))
    done2 = await complete(api, other_runner, second["job"]["id"], envelope)
    assert done2["run"]["evidenceLevel"] == "INDEPENDENTLY_REPLICATED"
    levels = {d["evidenceLevel"] async for d in db.runs.find({})}
    assert levels == {"Independently Replicated"}


async def _refused(api, db, runner, job_id, envelope, code):
    before = await db.runs.count_documents({})
    result = await complete(api, runner, job_id, envelope)
    assert [e["code"] for e in result["userErrors"]] == [code], result
    assert result["run"] is None
    assert await db.runs.count_documents({}) == before


async def _claimed_job(api, db):
    """A queued job claimed by a runner with a signing key: (job, runner's secret, signer, job document)."""
    objects, maintainer, job = await _queued_job(api, db)
    signer = Ed25519PrivateKey.generate()
    runner = await support.key(db, Scope.runner, signer)
    await claim(api, runner)
    return job, runner, signer, await db.jobs.find_one({"_id": ids.decode_as(job["id"], "BenchmarkJob")})


async def test_bad_results_are_refused_and_nothing_is_published(api, db):
    job, runner, signer, doc = await _claimed_job(api, db)
    good = json.loads(support.signed_result(doc, signer))

    # A number changed after signing.
    import base64

    statement = json.loads(base64.b64decode(good["payload"]))
    statement["predicate"]["manifests"][0]["spec"]["measurements"][0]["value"] = 1
    tampered = {**good, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}
    await _refused(api, db, runner, job["id"], json.dumps(tampered), "SIGNATURE_INVALID")
    # Signed by someone else's key (an unknown key, then another runner's registered key).
    stranger = Ed25519PrivateKey.generate()
    await _refused(api, db, runner, job["id"], support.signed_result(doc, stranger), "SIGNATURE_INVALID")
    other_signer = Ed25519PrivateKey.generate()
    await support.key(db, Scope.runner, other_signer, name="other")
    await _refused(api, db, runner, job["id"], support.signed_result(doc, other_signer), "SIGNATURE_INVALID")
    # Malformed envelopes.
    await _refused(api, db, runner, job["id"], "{not json", "MALFORMED_ENVELOPE")
    await _refused(api, db, runner, job["id"], json.dumps({"payloadType": "x"}), "MALFORMED_ENVELOPE")
    await _refused(api, db, runner, job["id"], json.dumps({**good, "payload": "@@@"}), "BAD_BASE64")
    await _refused(api, db, runner, job["id"], json.dumps({**good, "payloadType": "text/plain"}), "WRONG_PAYLOAD_TYPE")
    # Digests the job does not expect (a result for another implementation), signed properly.
    wrong = dict(doc, expected={**doc["expected"], "implementationDigest": "sha256:" + "d" * 64})
    await _refused(api, db, runner, job["id"], support.signed_result(wrong, signer), "DIGEST_MISMATCH")
    # Still claimable to completion afterwards: the refusals changed nothing.
    assert (await complete(api, runner, job["id"], json.dumps(good)))["job"]["state"] == "succeeded"
    # A second completion.
    await _refused(api, db, runner, job["id"], json.dumps(good), "ALREADY_COMPLETED")


async def test_a_result_that_is_not_the_format_is_refused_naming_the_field(api, db):
    job, runner, signer, doc = await _claimed_job(api, db)
    run, env = support.result_manifests(doc)
    # Properly signed, but its correctness says more than all of the elements matched.
    run_json = run.to_json()
    run_json["spec"]["correctness"] = {"comparator": "allclose", "matchedRatio": 1.5}
    payload = statement_bytes(
        run.metadata.name, format_digest(run), BENCHMARK_RUN_PREDICATE, {"job": doc["_id"], "manifests": [run_json, env.to_json()]}
    )
    result = await complete(api, runner, job["id"], json.dumps(sign_envelope(payload, signer)))
    assert result["userErrors"] == [
        {"field": "envelope", "code": "INVALID_MANIFEST", "message": "predicate.manifests: spec.correctness.matchedRatio: must be <= 1"}
    ]
    assert result["run"] is None and await db.runs.count_documents({}) == 0


async def test_only_the_holder_completes_and_not_after_its_lease(api, db):
    objects, maintainer, job = await _queued_job(api, db)
    signer, other_signer = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    runner = await support.key(db, Scope.runner, signer)
    other = await support.key(db, Scope.runner, other_signer, name="other")
    await claim(api, runner)
    doc = await db.jobs.find_one({"_id": ids.decode_as(job["id"], "BenchmarkJob")})
    await _refused(api, db, other, job["id"], support.signed_result(doc, other_signer), "JOB_NOT_HELD")
    await db.jobs.update_one({"_id": doc["_id"]}, {"$set": {"lease.expiresAt": datetime.now(UTC) - timedelta(seconds=1)}})
    await _refused(api, db, runner, job["id"], support.signed_result(doc, signer), "LEASE_EXPIRED")


async def test_oversized_payload_is_refused_before_parsing(api, db):
    objects, maintainer, job = await _queued_job(api, db)
    signer = Ed25519PrivateKey.generate()
    runner = await support.key(db, Scope.runner, signer)
    await claim(api, runner)
    huge = "x" * 2_000_000
    response = await api.http.post(
        "/graphql",
        content=json.dumps({"query": support.COMPLETE, "variables": {"job": job["id"], "envelope": huge}}),
        headers={**bearer(runner), "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    big = json.dumps({"payloadType": "application/vnd.in-toto+json", "payload": "A" * 600_000, "signatures": []})
    await _refused(api, db, runner, job["id"], big, "ENVELOPE_TOO_LARGE")


async def test_killed_runner_job_returns_to_the_queue_after_its_lease(api, db):
    objects, maintainer, job = await _queued_job(api, db)
    signer = Ed25519PrivateKey.generate()
    runner = await support.key(db, Scope.runner, signer)
    first = await claim(api, runner, lease=1)
    assert first["job"]["id"] == job["id"]
    assert (await claim(api, runner))["job"] is None  # held, not yet expired
    await asyncio.sleep(1.2)  # the runner "died": it never completes
    again = await claim(api, runner)
    assert again["job"]["id"] == job["id"]
    doc = await db.jobs.find_one({"_id": ids.decode_as(job["id"], "BenchmarkJob")})
    assert doc["attempts"] == 1 and [h.get("reason") for h in doc["history"]][-2] == "lease_expired"
    done = await complete(api, runner, job["id"], support.signed_result(doc, signer))
    assert done["job"]["state"] == "succeeded"


async def test_twenty_racing_claims_take_five_jobs_once_each(api, db):
    objects = await support.registry_with_controlled_definition(db)
    maintainer = await support.key(db, Scope.maintainer)
    for i in range(5):
        await request(api, maintainer, objects, idem=f"race-{i}")
    runners = [await support.key(db, Scope.runner, Ed25519PrivateKey.generate(), name=f"r{i}") for i in range(4)]
    results = await asyncio.gather(*(claim(api, runners[i % 4]) for i in range(20)))
    claimed = [r["job"]["id"] for r in results if r["job"]]
    assert len(claimed) == 5 and len(set(claimed)) == 5
    assert await db.jobs.count_documents({"state": "claimed"}) == 5


async def test_runner_reported_failures(api, db):
    objects, maintainer, job = await _queued_job(api, db)
    runner = await support.key(db, Scope.runner, Ed25519PrivateKey.generate())
    await claim(api, runner)
    fail = """mutation($job: ID!, $code: BenchmarkJobFailureCode!) { benchmarkJobFail(input: {job: $job, code: $code, message: "boom"}) {
      job { state attempts failure { code } } userErrors { code } } }"""
    retried = (await api.data(fail, {"job": job["id"], "code": "runtime_error"}, bearer(runner)))["benchmarkJobFail"]
    assert retried["job"]["state"] == "queued" and retried["job"]["attempts"] == 1
    await claim(api, runner)
    final = (await api.data(fail, {"job": job["id"], "code": "compile_error"}, bearer(runner)))["benchmarkJobFail"]
    assert final["job"]["state"] == "failed" and final["job"]["failure"]["code"] == "compile_error"


RENEW = """mutation($job: ID!, $lease: Int!) { benchmarkJobRenewLease(input: {job: $job, leaseSeconds: $lease}) {
  job { state lease { expiresAt } } userErrors { field message code } } }"""


async def test_only_the_holder_renews_a_lease_and_only_while_it_lives(api, db):
    objects, maintainer, job = await _queued_job(api, db)
    runner = await support.key(db, Scope.runner, Ed25519PrivateKey.generate())
    other = await support.key(db, Scope.runner, Ed25519PrivateKey.generate(), name="other")
    await claim(api, runner, lease=60)
    renewed = (await api.data(RENEW, {"job": job["id"], "lease": 3600}, bearer(runner)))["benchmarkJobRenewLease"]
    expires = datetime.fromisoformat(renewed["job"]["lease"]["expiresAt"])
    assert renewed["userErrors"] == [] and expires > datetime.now(UTC) + timedelta(seconds=3500)
    refused = (await api.data(RENEW, {"job": job["id"], "lease": 3600}, bearer(other)))["benchmarkJobRenewLease"]
    assert refused["userErrors"][0]["code"] == "JOB_NOT_HELD"
    too_long = (await api.data(RENEW, {"job": job["id"], "lease": 10**6}, bearer(runner)))["benchmarkJobRenewLease"]
    assert too_long["userErrors"][0]["field"] == "leaseSeconds"
    await db.jobs.update_one(
        {"_id": ids.decode_as(job["id"], "BenchmarkJob")}, {"$set": {"lease.expiresAt": datetime.now(UTC) - timedelta(seconds=1)}}
    )
    late = (await api.data(RENEW, {"job": job["id"], "lease": 3600}, bearer(runner)))["benchmarkJobRenewLease"]
    assert late["userErrors"][0]["code"] == "LEASE_EXPIRED"


async def test_a_claim_without_lease_seconds_is_held_for_an_hour(api, db):
    # The README's default, the same one `kernelindex runner` and `jobs claim` ask for.
    objects, maintainer, job = await _queued_job(api, db)
    runner = await support.key(db, Scope.runner, Ed25519PrivateKey.generate())
    plain = """mutation { benchmarkJobClaim(input: {gpu: "NVIDIA H200"}) {
      job { id lease { claimedAt expiresAt } } userErrors { code } } }"""
    claimed = (await api.data(plain, headers=bearer(runner)))["benchmarkJobClaim"]
    assert claimed["userErrors"] == [] and claimed["job"]["id"] == job["id"]
    lease = claimed["job"]["lease"]
    held = datetime.fromisoformat(lease["expiresAt"]) - datetime.fromisoformat(lease["claimedAt"])
    assert held == timedelta(hours=1)


async def test_a_run_is_published_with_its_job_succeeding_or_not_at_all(db, mongo_uri):
    # A server whose connections name an application, so a failpoint fails this server's commands
    # only. Completing a job takes several find-and-modify commands (the event counter for the run
    # and its cohort, reserved at once; the job; the job's event); each attempt fails the next one in turn. Every
    # failed attempt must leave nothing behind, and the runner's retry then succeeds.
    flaky_uri = mongo_uri + ("&" if "?" in mongo_uri else "?") + "appName=kernelindex-flaky"
    app = create_app(flaky_uri, Settings(database=db.name, mongodb_uri=flaky_uri))
    async with (
        LifespanManager(app) as manager,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://kernelindex.test") as http,
    ):
        api = GraphQLClient(http)
        job, runner, signer, doc = await _claimed_job(api, db)
        envelope = support.signed_result(doc, signer)
        failpoint = {"failCommands": ["findAndModify"], "appName": "kernelindex-flaky", "errorCode": 8}
        for skip in range(10):
            try:
                await db.client.admin.command({"configureFailPoint": "failCommand", "mode": {"skip": skip, "times": 1}, "data": failpoint})
            except OperationFailure as error:
                pytest.skip(f"this database server injects no faults (MONGODB_URI without test commands): {error}")
            try:
                answer = await api.post(support.COMPLETE, {"job": job["id"], "envelope": envelope}, bearer(runner))
            finally:
                await db.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
            if "errors" not in answer:
                break
            assert answer["errors"][0]["message"] == "Unexpected error." and "Traceback" not in json.dumps(answer)
            assert await db.runs.count_documents({}) == 0, f"a run was published although completing failed (failed command {skip + 1})"
            assert (await db.jobs.find_one({"_id": doc["_id"]}))["state"] == "claimed"
        assert skip == 3  # three commands failed in turn (the event counter, the job, its event), then the fourth attempt ran clean
        done = answer["data"]["benchmarkJobComplete"]
        assert done["userErrors"] == [] and done["job"]["state"] == "succeeded"
        assert done["run"]["evidenceLevel"] == "KERNELINDEX_VERIFIED"
        assert await db.runs.count_documents({}) == 1
