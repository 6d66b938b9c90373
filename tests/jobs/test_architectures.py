"""A job for a GPU the implementation cannot run on is refused (UNSUPPORTED_GPU, nothing written);
GraphQL shows what each implementation supports; the runner refuses such a job before running."""

import json

from registry.format import format_digest
from store.keys import Scope
from tests.command import kernelindex
from tests.jobs import support

NODES = """query($ids: [ID!]!) { nodes(ids: $ids) { ... on Implementation { name architectures } } }"""


def _cuda(defn, name: str, architectures: list[str] | None) -> object:
    # No architectures given: what the re-expression writes for CUDA code published before they
    # were declared (registry/architectures.py's legacy rule: sm_90a).
    return support.controlled_implementation(defn, name, tuple(architectures or ("sm_90",)))


def _portable(defn) -> object:
    return _cuda(defn, "portable", ["sm_90", "sm_100", "sm_120"])


async def test_unsupported_gpu_is_refused_naming_what_is_supported(api, db):
    objects = await support.registry_with_controlled_definition(db)
    # CUDA code published before architectures were declared: sm_90a, as all of it was then
    await support.publish_objects(db, _cuda(objects["definition"], "legacy", None))
    maintainer = await support.key(db, Scope.maintainer)
    refused = await support.request(api, maintainer, objects, implementation="legacy", gpu="NVIDIA B200")
    assert refused["job"] is None
    assert refused["userErrors"] == [
        {
            "field": "gpu",
            "code": "UNSUPPORTED_GPU",
            "message": "legacy does not run on NVIDIA B200 (sm_100); it supports sm_90",
        }
    ]
    unknown = await support.request(api, maintainer, objects, implementation="legacy", gpu="NVIDIA X1", idem="k2")
    assert unknown["userErrors"][0]["code"] == "UNSUPPORTED_GPU" and "does not know" in unknown["userErrors"][0]["message"]
    assert await db.jobs.count_documents({}) == 0
    accepted = await support.request(api, maintainer, objects, implementation="legacy", idem="k3")  # the H200
    assert accepted["userErrors"] == [] and accepted["job"]["gpu"] == "NVIDIA H200"


async def test_b200_job_for_a_portable_implementation_is_accepted(api, db):
    objects = await support.registry_with_controlled_definition(db)
    await support.publish_objects(db, _portable(objects["definition"]))
    maintainer = await support.key(db, Scope.maintainer)
    accepted = await support.request(api, maintainer, objects, implementation="portable", gpu="NVIDIA B200")
    assert accepted["userErrors"] == [] and accepted["job"]["state"] == "queued"
    runner = await support.key(db, Scope.runner)
    assert (await support.claim(api, runner, gpu="NVIDIA H200"))["job"] is None  # queued for the B200 only
    assert (await support.claim(api, runner, gpu="NVIDIA B200"))["job"]["state"] == "claimed"

    from resolvers import ids

    revisions = [_cuda(objects["definition"], "legacy", None), _portable(objects["definition"])]
    await support.publish_objects(db, *revisions[:1])
    listed = await api.data(NODES, {"ids": [ids.encode("Implementation", format_digest(m)) for m in revisions]})
    by_name = {i["name"]: i["architectures"] for i in listed["nodes"]}
    assert by_name == {"legacy": ["sm_90"], "portable": ["sm_100", "sm_120", "sm_90"]}  # the format sorts a set-like list


def test_runner_refuses_a_job_for_a_gpu_its_code_does_not_support(tmp_path):
    """The offline runner (a real process) checks the job against its own registry entry before it
    runs anything: ext-streamnorm is sm_90a code, the job asks for a B200."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from kernels.harness import format_manifests
    from kernels.harness.protocol import Settings
    from kernels.implementations import get
    from kernels.operations import get_operation
    from registry.dsse import private_pem

    op = get_operation("051")
    document = {
        "id": "j1",
        "jobId": "j1",
        "gpu": "NVIDIA B200",
        "definition": {"digest": format_digest(format_manifests.operation(op)), "name": "051"},
        "implementation": {
            "name": "kernelindex-051-ext-streamnorm",
            "digest": format_digest(format_manifests.implementation(op, get("ext-streamnorm"))),
        },
        "workload": format_manifests.suite(op, list(op.small_case_shapes), True).to_json(),
        "protocol": format_manifests.protocol(Settings(device="cuda", rounds=5, warmups=10, samples=50)).to_json(),
    }
    (tmp_path / "job.json").write_text(json.dumps(document))
    (tmp_path / "key.pem").write_bytes(private_pem(Ed25519PrivateKey.generate()))
    result = kernelindex(
        "runner", "--job", str(tmp_path / "job.json"), "--out", str(tmp_path / "r.json"), "--signing-key", str(tmp_path / "key.pem")
    )
    assert result.returncode == 1
    failure = json.loads((tmp_path / "r.json").read_text())["failure"]
    assert failure["code"] == "runtime_error"
    assert failure["message"] == ("UNSUPPORTED_GPU: kernelindex-051-ext-streamnorm does not run on NVIDIA B200 (sm_100); it supports sm_90")
