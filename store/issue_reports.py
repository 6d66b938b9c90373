"""Issue reports: "Report an issue with this run", from its page or the API (runReportIssue).

A report is stored, never shown on the run's page (it may be wrong, or spam) and never changes
the run; maintainers read them with `kernelindex reports list`. Anyone may report, with or
without an API key, within rate limits kept in the database (so every process, every replica,
counts the same): a key at most KEY_LIMIT reports an hour; without one, at most RUN_LIMIT an
hour on one run and ANONYMOUS_LIMIT an hour in all. Each limit is a counter per hour window,
incremented in the same transaction that stores the report: a refused report writes nothing.
"""

from __future__ import annotations

import secrets
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from store.keys import ApiKey
from store.transactions import in_transaction

MAX_REPORT_CHARS = 2000
CATEGORIES = {
    "wrong_value": "a measurement or rank is wrong",
    "wrong_identity": "the implementation, workload, GPU or source is misattributed",
    "not_reproducible": "it could not be reproduced",
    "duplicate": "it duplicates another run",
    "other": "something else",
}
WINDOW_S = 3600
KEY_LIMIT = 20
RUN_LIMIT = 5
ANONYMOUS_LIMIT = 60

Doc = dict[str, Any]


class ReportError(Exception):
    def __init__(self, code: str, message: str, field: str | None = "text"):
        super().__init__(message)
        self.code = code
        self.field = field


def check_report(category: str, text: str) -> str:
    if category not in CATEGORIES:
        raise ReportError("BAD_USER_INPUT", f"category must be one of {', '.join(CATEGORIES)}", "category")
    text = text.strip()
    if not text:
        raise ReportError("BAD_USER_INPUT", "text must not be empty: say what is wrong")
    if len(text) > MAX_REPORT_CHARS:
        raise ReportError("REPORT_TOO_LONG", f"text is {len(text)} characters; a report holds at most {MAX_REPORT_CHARS}")
    if any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in text):
        raise ReportError("BAD_USER_INPUT", "text must not contain control characters")
    return text


def _buckets(run_digest: str, key: ApiKey | None, window: int) -> list[tuple[str, int, str]]:
    if key is not None:
        return [(f"report:key:{key.id}:{window}", KEY_LIMIT, f"this API key has sent {KEY_LIMIT} reports this hour")]
    return [
        (f"report:run:{run_digest}:{window}", RUN_LIMIT, f"this run has had {RUN_LIMIT} reports without an API key this hour"),
        (f"report:anonymous:{window}", ANONYMOUS_LIMIT, f"{ANONYMOUS_LIMIT} reports without an API key were sent this hour"),
    ]


async def report_issue(
    db: AsyncDatabase, *, run_digest: str, key: ApiKey | None, category: str, text: str, now: datetime | None = None
) -> Doc:
    """Store one report; ReportError (RATE_LIMITED, REPORT_TOO_LONG, BAD_USER_INPUT) writes nothing."""
    text = check_report(category, text)
    now = now or datetime.now(UTC)
    window = int(now.timestamp()) // WINDOW_S
    window_end = datetime.fromtimestamp((window + 1) * WINDOW_S, UTC)

    async def write(session: AsyncClientSession) -> Doc:
        for bucket, limit, reason in _buckets(run_digest, key, window):
            counter = await db.rate_limits.find_one_and_update(
                {"_id": bucket},
                {"$inc": {"count": 1}, "$setOnInsert": {"expiresAt": window_end + timedelta(hours=1)}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
                session=session,
            )
            if counter["count"] > limit:
                wait = int((window_end - now).total_seconds() // 60) + 1
                raise ReportError("RATE_LIMITED", f"{reason}; try again in {wait} minutes", None)
        doc = {
            "_id": secrets.token_hex(8),
            "runDigest": run_digest,
            "category": category,
            "text": text,
            "reporter": {"name": key.name, "keyId": key.id, "scope": key.scope.value} if key else None,
            "createdAt": now,
            "state": "open",
        }
        await db.issue_reports.insert_one(doc, session=session)
        return doc

    return await in_transaction(db, write)


async def list_reports(db: AsyncDatabase, *, run_digest: str | None = None, limit: int = 100) -> list[Doc]:
    """Newest first."""
    query = {"runDigest": run_digest} if run_digest else {}
    return await db.issue_reports.find(query).sort("createdAt", -1).limit(limit).to_list()
