"""Helpers for job tests: keys, a controlled definition in the registry, signed results."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.digest import manifest_digest
from registry.dsse import BENCHMARK_RUN_PREDICATE, keyid, public_pem, sign_envelope, statement_bytes
from registry.manifests import Manifest, make_manifest
from resolvers import ids
from store.keys import Scope, create_key
from store.manifest_set import publish_set
from tests import factories

GPU = "NVIDIA H200"


async def key(db, scope: Scope, signing: Ed25519PrivateKey | None = None, name: str = "test") -> str:
    pem = public_pem(signing.public_key()) if signing else None
    _, secret = await create_key(
        db, name=name, scope=scope, public_key_pem=pem, signing_keyid=keyid(signing.public_key()) if signing else None
    )
    return secret


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def controlled_protocol() -> Manifest:
    return make_manifest(
        "BenchmarkProtocol",
        "synthetic-controlled-v1",
        {
            "harness": {"name": "kernelindex-controlled", "version": "v1"},
            "correctness": {"reference": "definition reference", "comparator": "allclose", "rounds": 5},
            "measurement": {"timer": "cuda_graph_replay_events", "primaryStatistic": "median", "samples": 50},
            "comparability": {"family": "kernelindex_controlled", "version": "v1"},
        },
        labels={"device": "cuda"},
    )


def controlled_implementation(defn: Manifest, name: str = "ext") -> Manifest:
    return make_manifest(
        "ImplementationRevision",
        f"kernelindex-{name}",
        {
            "name": name,
            "project": "kernelindex",
            "revision": "v1",
            "definitionDigest": manifest_digest(defn),
            "code": {"repository": "kernelindex", "path": "kernels/", "entryPoint": name, "digest": "sha256:" + "c" * 64},
        },
    )


async def registry_with_controlled_definition(db) -> dict[str, Manifest]:
    defn = factories.definition("controlled-op")
    objects = {
        "definition": defn,
        "workload": factories.workload(defn),
        "protocol": controlled_protocol(),
        "implementation": controlled_implementation(defn),
    }
    await publish_set(db, list(objects.values()))
    return objects


def environment(gpu: str = GPU, host: str = "h200-a") -> Manifest:
    return make_manifest(
        "ExecutionEnvironment",
        f"runner-{host}",
        {
            "hardware": {"vendor": "nvidia", "product": gpu, "architecture": "sm_90"},
            "software": {"driver": "580", "libraries": {"torch": "2.11"}},
        },
    )


def result_manifests(
    job_doc: dict, *, median_ns: int = 20_000, status: str = "passed", env: Manifest | None = None
) -> tuple[Manifest, Manifest]:
    env = env or environment(job_doc["gpu"])
    expected = job_doc["expected"]
    run = make_manifest(
        "BenchmarkRun",
        f"controlled-{job_doc['_id']}",
        {
            "status": status,
            "timing": {"primaryStatistic": "median", "latencyNs": {"median": median_ns}},
            "observedAt": "2026-11-30T10:00:00.000Z",
            "protocolDigest": expected["protocolDigest"],
            "workloadDigest": expected["workloadDigest"],
            "environmentDigest": manifest_digest(env),
            "implementationDigest": expected["implementationDigest"],
        },
        title="ext · controlled-op · H200",
    )
    return run, env


def signed_result(job_doc: dict, signer: Ed25519PrivateKey, **kw) -> str:
    run, env = result_manifests(job_doc, **kw)
    payload = statement_bytes(
        run.metadata.name,
        manifest_digest(run),
        BENCHMARK_RUN_PREDICATE,
        {"job": job_doc["_id"], "manifests": [run.to_json(), env.to_json()]},
    )
    return json.dumps(sign_envelope(payload, signer))


REQUEST = """mutation($input: BenchmarkJobRequestInput!) { benchmarkJobRequest(input: $input) {
  created job { id state gpu implementationName } userErrors { field message code } } }"""
CLAIM = """mutation($gpu: String!, $lease: Int!) { benchmarkJobClaim(input: {gpu: $gpu, leaseSeconds: $lease}) {
  job { id state lease { runner } runnerDocument } userErrors { field message code } } }"""
COMPLETE = """mutation($job: ID!, $envelope: String!) { benchmarkJobComplete(input: {job: $job, envelope: $envelope}) {
  job { state failure { code } } run { digest evidenceLevel status } userErrors { field message code } } }"""


async def request(api, secret: str, objects: dict, idem: str = "k1", **overrides) -> dict:
    payload = {
        "definition": ids.encode("Definition", manifest_digest(objects["definition"])),
        "implementation": "ext",
        "gpu": GPU,
        "idempotencyKey": idem,
        **overrides,
    }
    return (await api.data(REQUEST, {"input": payload}, bearer(secret)))["benchmarkJobRequest"]


async def claim(api, secret: str, gpu: str = GPU, lease: int = 600) -> dict:
    return (await api.data(CLAIM, {"gpu": gpu, "lease": lease}, bearer(secret)))["benchmarkJobClaim"]


async def complete(api, secret: str, job_id: str, envelope: str) -> dict:
    return (await api.data(COMPLETE, {"job": job_id, "envelope": envelope}, bearer(secret)))["benchmarkJobComplete"]
