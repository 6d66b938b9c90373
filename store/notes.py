"""Notes: short unsigned remarks on a run by a partner or a maintainer.

Shown apart from signed reproductions; like them, a note never changes a run's evidence level.
Notes are kept in publication order (`seq` from the event log's counter) and appended to the
event log as `run.noted`.
"""

from __future__ import annotations

import secrets
import unicodedata
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from store import events
from store.keys import ApiKey
from store.read_models import NoteDocument
from store.transactions import in_transaction

MAX_NOTE_CHARS = 2000
EVENT_TYPE = "run.noted"

Doc = dict[str, Any]


class NoteError(Exception):
    def __init__(self, code: str, message: str, field: str = "text"):
        super().__init__(message)
        self.code = code
        self.field = field


def check_text(text: str) -> str:
    text = text.strip()
    if not text:
        raise NoteError("BAD_USER_INPUT", "text must not be empty")
    if len(text) > MAX_NOTE_CHARS:
        raise NoteError("NOTE_TOO_LONG", f"text is {len(text)} characters; a note holds at most {MAX_NOTE_CHARS}")
    if any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in text):
        raise NoteError("BAD_USER_INPUT", "text must not contain control characters")
    return text


async def add_note(db: AsyncDatabase, *, run_digest: str, key: ApiKey, text: str) -> NoteDocument:
    text = check_text(text)
    now = datetime.now(UTC)
    note_id = secrets.token_hex(8)

    async def write(session: AsyncClientSession) -> Doc:
        seq = await events.reserve(db, 1, session)
        doc = {
            "_id": note_id,
            "runDigest": run_digest,
            "text": text,
            "author": {"name": key.name, "keyId": key.id, "scope": key.scope.value},
            "createdAt": now,
            "seq": seq,
        }
        event = events.event_document(seq, EVENT_TYPE, now, runDigest=run_digest, noteId=note_id, author=key.name)
        await db.notes.insert_one(doc, session=session)
        await db.events.insert_one(event, session=session)
        return doc

    return NoteDocument.model_validate(await in_transaction(db, write))


async def notes_page(db: AsyncDatabase, *, run_digest: str, first: int, after_seq: int | None) -> tuple[list[NoteDocument], bool]:
    """Oldest first. Returns (page, has_next_page)."""
    query: Doc = {"runDigest": run_digest}
    if after_seq is not None:
        query["seq"] = {"$gt": after_seq}
    docs = await db.notes.find(query).sort("seq", 1).limit(first + 1).to_list()
    return [NoteDocument.model_validate(d) for d in docs[:first]], len(docs) > first
