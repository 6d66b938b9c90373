"""Query limits and error masking."""

from bson import ObjectId

from resolvers import ids


async def test_first_above_100_is_a_clear_error(api):
    body = await api.post("{ runs(first: 101) { edges { cursor } } }")
    assert body["data"] is None
    assert body["errors"][0]["message"] == "first: 101 is above the maximum page size of 100"
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_too_deep_query_is_refused(api):
    deep = "{ runs { edges { node { group { leader { group { leader { group { leader { group { leader { group { leader { digest } } } } } } } } } } } } } }"
    body = await api.post(deep)
    assert "exceeds maximum operation depth" in body["errors"][0]["message"]


async def test_too_many_aliases_are_refused(api):
    query = "{ " + " ".join(f"a{i}: definitions {{ name }}" for i in range(40)) + " }"
    body = await api.post(query)
    assert "aliases found" in body["errors"][0]["message"]


async def test_too_many_tokens_are_refused(api):
    query = "{ " + " ".join("definitions { name }" for _ in range(1500)) + " }"
    body = await api.post(query)
    assert "more than 4000 tokens" in body["errors"][0]["message"]


async def test_unexpected_errors_are_masked(api, db):
    # A document that breaks an invariant (written around the validator) makes a resolver fail;
    # the client sees a generic message, never the exception or a stack trace.
    digest = "sha256:" + "e" * 64
    await db.runs.insert_one({"_id": digest, "broken": ObjectId()}, bypass_document_validation=True)
    body = await api.post("query($id: ID!) { run(id: $id) { title } }", {"id": ids.encode("Run", digest)})
    assert body["errors"][0]["message"] == "Unexpected error."
    assert "Traceback" not in str(body) and "KeyError" not in str(body)
