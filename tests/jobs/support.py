"""Helpers for job tests: keys, a controlled definition in the registry, signed results, a
finished job."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from loaders.common.format_set import FormatSet
from loaders.pipeline import publish_format_set
from registry.dsse import BENCHMARK_RUN_PREDICATE, keyid, public_pem, sign_envelope, statement_bytes
from registry.format import FormatManifest, format_digest, make_format_manifest
from resolvers import ids
from store import jobs as job_store
from store.job_specs import JobRequest, resolve_job_spec
from store.keys import Scope, create_key

GPU = "NVIDIA H200"


async def key(db, scope: Scope, signing: Ed25519PrivateKey | None = None, name: str = "test") -> str:
    pem = public_pem(signing.public_key()) if signing else None
    _, secret = await create_key(
        db, name=name, scope=scope, public_key_pem=pem, signing_keyid=keyid(signing.public_key()) if signing else None
    )
    return secret


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def _format(kind: str, name: str, spec: dict, **metadata) -> FormatManifest:
    return make_format_manifest(kind, {"name": name, **metadata}, spec)


def definition(name: str = "controlled-op") -> FormatManifest:
    return _format(
        "OperationSpec",
        name,
        {
            "family": "synthetic",
            "axes": {"n": {"role": "variable", "type": "integer"}},
            "inputs": [{"name": "x", "tensor": {"shape": ["n"], "dtype": "fp32"}}],
            "outputs": [{"name": "y", "tensor": {"shape": ["n"], "dtype": "fp32"}}],
            "semantics": {"expression": "y = x + 1", "mutation": "none", "determinism": "deterministic"},
        },
        title=f"Synthetic {name}",
        description="A synthetic operation: y = x + 1.",
    )


def workload(defn: FormatManifest, cases: int = 3) -> FormatManifest:
    return _format(
        "WorkloadSuite",
        f"{defn.metadata.name}-suite",
        {
            "operationSpecDigest": format_digest(defn),
            "cases": [{"externalId": str(i), "axes": {"n": 1024 * (i + 1)}} for i in range(cases)],
            "correctness": {"comparator": "synthetic_allclose", "description": "allclose per case"},
            "aggregation": {"metric": "latency", "statistic": "geomean"},
        },
    )


def controlled_protocol() -> FormatManifest:
    return _format(
        "BenchmarkProtocol",
        "synthetic-controlled-v1",
        {
            "harness": {"name": "kernelindex-controlled", "version": "v1"},
            "correctness": {"reference": "definition reference", "comparator": "allclose"},
            "measurement": {"timer": "cuda_graph_replay_events", "primaryStatistic": "geomean", "samples": 50},
            "comparability": {"family": "kernelindex_controlled"},
        },
        labels={"device": "cuda", "rounds": "5", "case_statistic": "median"},
    )


def controlled_implementation(defn: FormatManifest, name: str = "ext", architectures: tuple[str, ...] = ("sm_90",)) -> FormatManifest:
    return _format(
        "ImplementationRevision",
        name,
        {
            "projectRevision": {"version": "v1", "commit": "c" * 40},
            "operation": {"specDigest": format_digest(defn)},
            "callable": {"language": "cuda", "path": "kernels/", "symbol": name},
            "support": {"hardwareArchitectures": list(architectures), "dtypes": ["fp32"]},
            "source": {"contentDigest": "sha256:" + "c" * 64},
            "licensing": {},
        },
        labels={"project": "kernelindex"},
    )


async def registry_with_controlled_definition(db) -> dict[str, FormatManifest]:
    defn = definition("controlled-op")
    objects = {
        "definition": defn,
        "workload": workload(defn),
        "protocol": controlled_protocol(),
        "implementation": controlled_implementation(defn),
    }
    await publish_format_set(db, FormatSet(loose=list(objects.values())))
    return objects


def environment(gpu: str = GPU, host: str = "h200-a") -> FormatManifest:
    return _format(
        "ExecutionEnvironment",
        f"runner-{host}",
        {
            "hardware": {"vendor": "nvidia", "product": gpu, "architecture": "sm_90"},
            "software": {"driver": "580", "framework": {"name": "torch", "version": "2.11"}},
        },
    )


def result_manifests(
    job_doc: dict, *, median_ns: int = 20_000, status: str = "passed", env: FormatManifest | None = None
) -> tuple[FormatManifest, FormatManifest]:
    env = env or environment(job_doc["gpu"])
    expected = job_doc["expected"]
    run = _format(
        "BenchmarkRun",
        f"controlled-{job_doc['_id']}",
        {
            "status": status,
            "measurements": [{"metric": "latency", "statistic": "geomean", "unit": "ns", "value": median_ns}],
            "sourceNative": {"source": "kernelindex", "externalId": f"controlled-{job_doc['_id']}", "metrics": {}},
            "observedAt": "2026-11-30T10:00:00.000Z",
            "protocolDigest": expected["protocolDigest"],
            "workloadDigest": expected["workloadDigest"],
            "environmentDigest": format_digest(env),
            "implementationDigest": expected["implementationDigest"],
        },
        title="ext · controlled-op · H200",
    )
    return run, env


def signed_result(job_doc: dict, signer: Ed25519PrivateKey, **kw) -> str:
    run, env = result_manifests(job_doc, **kw)
    payload = statement_bytes(
        run.metadata.name,
        format_digest(run),
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
        "definition": ids.encode("Definition", format_digest(objects["definition"])),
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


def harness_objects(shapes: list[tuple[int, int]] | None = None, *, small: bool = True, samples: int = 5) -> dict[str, FormatManifest]:
    """051's operation, a suite (these shapes, else the small CPU shapes; `small` names it so), the
    CPU protocol and the reference implementation, as the harness writes them (v1alpha1)."""
    from kernels.harness import format_manifests
    from kernels.harness.protocol import Settings as HarnessSettings
    from kernels.implementations import get
    from kernels.operations import get_operation

    op = get_operation("051")
    chosen = shapes if shapes is not None else list(op.small_case_shapes)
    return {
        "definition": format_manifests.operation(op),
        "workload": format_manifests.suite(op, chosen, small),
        "protocol": format_manifests.protocol(HarnessSettings(device="cpu", rounds=5, warmups=1, samples=samples)),
        "implementation": format_manifests.implementation(op, get("reference")),
    }


async def publish_objects(db, *manifests: FormatManifest) -> None:
    await publish_format_set(db, FormatSet(loose=list(manifests)))


async def finished_job(
    db, *, definition_digest: str, implementation: str, gpu: str, run_digest: str, requested_by: str, idempotency_key: str
) -> dict:
    """A job that succeeded with the stored run `run_digest`: requested, claimed, run and
    completed through store.jobs as the request mutation and a runner do (only the run is not
    measured again). JobSpecError when no rerun of `implementation` can be asked; AssertionError
    when an older job queued on `gpu` would be claimed instead (pick a GPU no other job waits on)."""
    spec = await resolve_job_spec(db, JobRequest(definition_digest, implementation, gpu))
    job, _ = await job_store.request_job(db, requested_by=requested_by, idempotency_key=idempotency_key, spec=spec)
    held = await job_store.claim(db, runner=f"{requested_by}-runner", gpu=gpu, lease_seconds=600)
    assert held is not None and held["_id"] == job["_id"], f"an older job queued on {gpu} was claimed first"
    held = await job_store.transition(db, held, job_store.JobState.running)
    return await job_store.transition(db, held, job_store.JobState.succeeded, runDigest=run_digest)
