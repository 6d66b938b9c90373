"""runAddNote: unsigned notes by partners and maintainers, shown apart from reproductions."""

from store.keys import Scope
from store.notes import MAX_NOTE_CHARS
from tests.partners import support
from tests.partners.support import ADD_NOTE, bearer


async def test_partners_and_maintainers_add_notes_listed_in_order(api, db):
    run = await support.published_run(db)
    _, partner = await support.partner(db, "partner-lab")
    maintainer = await support.key(db, Scope.maintainer, name="kix-maintainers")
    first = (await api.data(ADD_NOTE, {"run": run["id"], "text": "  Reproduced within 2 % on our B200.  "}, bearer(partner)))["runAddNote"]
    assert first["userErrors"] == []
    assert first["note"]["text"] == "Reproduced within 2 % on our B200."  # trimmed
    assert (first["note"]["author"], first["note"]["authorScope"]) == ("partner-lab", "partner")
    second = (await api.data(ADD_NOTE, {"run": run["id"], "text": "x" * MAX_NOTE_CHARS}, bearer(maintainer)))["runAddNote"]
    assert second["userErrors"] == [] and second["note"]["authorScope"] == "maintainer"

    data = (await api.data(support.RUN_EVIDENCE, {"id": run["id"]}))["run"]
    assert [(e["node"]["author"], len(e["node"]["text"])) for e in data["notes"]["edges"]] == [
        ("partner-lab", 34),
        ("kix-maintainers", MAX_NOTE_CHARS),
    ]
    assert data["attestations"]["edges"] == []  # notes are not reproductions
    assert data["evidenceLevel"] == "REPORTED"
    assert await db.events.count_documents({"type": "run.noted"}) == 2

    # Keyset pagination: one at a time.
    page = await api.data(
        "query($id: ID!) { run(id: $id) { notes(first: 1) { edges { cursor node { author } } pageInfo { hasNextPage endCursor } } } }",
        {"id": run["id"]},
    )
    notes = page["run"]["notes"]
    assert notes["pageInfo"]["hasNextPage"] is True
    rest = await api.data(
        "query($id: ID!, $after: String) { run(id: $id) { notes(first: 1, after: $after) { edges { node { author } } pageInfo { hasNextPage } } } }",
        {"id": run["id"], "after": notes["pageInfo"]["endCursor"]},
    )
    assert [e["node"]["author"] for e in rest["run"]["notes"]["edges"]] == ["kix-maintainers"]
    assert rest["run"]["notes"]["pageInfo"]["hasNextPage"] is False


async def test_bad_notes_are_refused_and_nothing_is_stored(api, db):
    run = await support.published_run(db)
    _, partner = await support.partner(db)
    reader = await support.key(db, Scope.reader)
    runner = await support.key(db, Scope.runner)
    cases = [
        (partner, run["id"], "x" * (MAX_NOTE_CHARS + 1), "NOTE_TOO_LONG", "text"),
        (partner, run["id"], "   ", "BAD_USER_INPUT", "text"),
        (partner, run["id"], "bell \x07", "BAD_USER_INPUT", "text"),
        (None, run["id"], "hello", "UNAUTHENTICATED", "authorization"),
        (reader, run["id"], "hello", "FORBIDDEN", "authorization"),
        (runner, run["id"], "hello", "FORBIDDEN", "authorization"),
        (partner, "not-an-id", "hello", "BAD_ID", "run"),
    ]
    for secret, run_id, text, code, field in cases:
        answer = (await api.data(ADD_NOTE, {"run": run_id, "text": text}, bearer(secret) if secret else None))["runAddNote"]
        assert answer["note"] is None
        assert [(e["code"], e["field"]) for e in answer["userErrors"]] == [(code, field)], (code, answer)
    assert await db.notes.count_documents({}) == 0
    assert await db.events.count_documents({"type": "run.noted"}) == 0
