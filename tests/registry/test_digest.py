"""Golden digests. The expected values were not computed by our code: the seed record page
states the protocol and environment digests in full and the run digest's prefix; the small
vectors were computed with `printf '<canonical bytes>' | sha256sum` in a shell."""

import pytest

from registry.digest import canonical_json, digest_of, manifest_digest
from registry.manifests import parse_manifest
from tests.fixtures import seed_manifests


def test_seed_protocol_and_environment_digests_match_the_page():
    seed = seed_manifests()
    run = seed["run"]["spec"]
    assert manifest_digest(parse_manifest(seed["protocol"])) == run["protocolDigest"]
    assert manifest_digest(parse_manifest(seed["environment"])) == run["environmentDigest"]
    assert run["protocolDigest"] == "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"


def test_seed_run_digest_matches_the_page_prefix():
    # The page shows "sha256:3c2100b045792938b030dc9…" as the record's digest.
    digest = manifest_digest(parse_manifest(seed_manifests()["run"]))
    assert digest.startswith("sha256:3c2100b045792938b030dc9")


def test_seed_manifests_round_trip_unchanged():
    for manifest in seed_manifests().values():
        assert parse_manifest(manifest).to_json() == manifest


def test_metadata_does_not_change_the_digest():
    seed = seed_manifests()["protocol"]
    renamed = {**seed, "metadata": {"name": "another-name", "title": "Another title"}}
    assert manifest_digest(parse_manifest(renamed)) == manifest_digest(parse_manifest(seed))


@pytest.mark.parametrize(
    "value, canonical, expected",
    [
        # printf '{"a":1,"b":[true,null,"x"]}' | sha256sum
        (
            {"b": [True, None, "x"], "a": 1},
            b'{"a":1,"b":[true,null,"x"]}',
            "eca8cfb31ab74533e1eb2f4c74d2d55dfe3c79ac704787e54be8647ea7777eb1",
        ),
        # printf '{"n":0.28508,"z":1e+21}' | sha256sum   (ECMAScript number formatting)
        ({"z": 1e21, "n": 0.28508}, b'{"n":0.28508,"z":1e+21}', "96182c04c2efdaf832cdde41dddfba0b2c41b9493609c6f9aba62627d1c15ed6"),
    ],
)
def test_canonical_json_vectors(value, canonical, expected):
    assert canonical_json(value) == canonical
    assert digest_of(value) == "sha256:" + expected
