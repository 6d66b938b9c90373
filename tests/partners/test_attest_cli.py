"""`kernelindex keys create --scope partner --public-key` and `kernelindex attest`, as a partner
runs them: real processes against a live gateway on 127.0.0.1."""

import json
import os
import subprocess

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.dsse import private_pem, public_pem
from tests.command import KERNELINDEX
from tests.partners import support
from tests.subscriptions.support import servers

pytestmark = pytest.mark.slow


def kernelindex(*args, env):
    return subprocess.run([KERNELINDEX, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=120)


async def test_a_partner_registers_a_key_and_attests_a_run(db, mongo_uri, tmp_path):
    env = {"MONGODB_URI": mongo_uri, "KERNELINDEX_DATABASE": db.name}
    run = await support.published_run(db)
    signing = Ed25519PrivateKey.generate()
    (tmp_path / "key.pem").write_bytes(private_pem(signing))
    (tmp_path / "key.pub.pem").write_text(public_pem(signing.public_key()))
    (tmp_path / "result.json").write_text(json.dumps(support.predicate()))

    created = kernelindex(
        "keys", "create", "--name", "partner-lab", "--scope", "partner", "--public-key", str(tmp_path / "key.pub.pem"), env=env
    )
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("kix_") and "created partner key" in created.stderr

    with servers(mongo_uri, db.name) as (server,):
        args = [
            "attest",
            "--run",
            run["id"],
            "--result",
            str(tmp_path / "result.json"),
            "--signing-key",
            str(tmp_path / "key.pem"),
            "--api",
            f"http://127.0.0.1:{server.port}",
        ]
        done = kernelindex(*args, "--api-key", secret, env=env)
        assert done.returncode == 0, done.stderr
        assert "recorded as attestation sha256:" in done.stderr
        doc = await db.attestations.find_one({})
        assert doc["spec"]["subjectDigest"] == run["digest"] and doc["spec"]["author"]["name"] == "partner-lab"
        assert doc["spec"]["measurement"]["aggregate"]["valueNs"] == 100_250

        # By digest, with the key from the environment: the same statement is recorded once.
        again = kernelindex(*[a if a != run["id"] else run["digest"] for a in args], env={**env, "KERNELINDEX_API_KEY": secret})
        assert again.returncode == 0, again.stderr
        assert "already recorded" in again.stderr
        assert await db.attestations.count_documents({}) == 1

        # A result that does not match the schema: each problem named, nothing sent.
        (tmp_path / "bad.json").write_text(json.dumps({**support.predicate(), "aggregate": {"statistic": "median"}, "colour": "red"}))
        bad = kernelindex(*[a if not a.endswith("result.json") else str(tmp_path / "bad.json") for a in args], "--api-key", secret, env=env)
        assert bad.returncode == 1
        assert "aggregate.valueNs: Field required" in bad.stderr and "colour: unknown field" in bad.stderr
        assert "Traceback" not in bad.stderr

        # Signed with a key that is not the registered one: the gateway's code is shown.
        (tmp_path / "other.pem").write_bytes(private_pem(Ed25519PrivateKey.generate()))
        other = kernelindex(*[a if not a.endswith("key.pem") else str(tmp_path / "other.pem") for a in args], "--api-key", secret, env=env)
        assert other.returncode == 1 and "error: UNKNOWN_SIGNER:" in other.stderr

        wrong_key = kernelindex(*args, "--api-key", "kix_nothere_secret", env=env)
        assert wrong_key.returncode == 1 and "UNAUTHENTICATED" in wrong_key.stderr
        assert await db.attestations.count_documents({}) == 1

    unreachable = kernelindex(*args, "--api-key", secret, env=env)
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr
