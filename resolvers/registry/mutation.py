"""Partner mutations: signed reproductions (runSubmitReproduction) and notes (runAddNote).

The registry subgraph's Mutation root. Expected failures are answered in `userErrors`
with a code; nothing is written then. Neither ever changes a run's evidence level.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from resolvers import ids
from resolvers.context import Info
from resolvers.types.attestation import Attestation
from resolvers.types.note import Note
from resolvers.types.run import Run
from resolvers.user_errors import Refusal, UserError, require_scope
from store.attestations import AttestationError, submit_reproduction
from store.issue_reports import ANONYMOUS_LIMIT, CATEGORIES, KEY_LIMIT, MAX_REPORT_CHARS, RUN_LIMIT, ReportError, report_issue
from store.keys import Scope
from store.notes import MAX_NOTE_CHARS, NoteError, add_note


@strawberry.input
class RunSubmitReproductionInput:
    run: strawberry.ID
    envelope: str = strawberry.field(
        description="A DSSE envelope (JSON text) holding an in-toto Statement v1 about the run's digest, with predicateType "
        "https://kernelindex.dev/attestation/reproduction/v1, signed by the ed25519 key registered to your API key."
    )


@strawberry.type
class RunSubmitReproductionPayload:
    attestation: Attestation | None = None
    run: Run | None = None
    created: bool = strawberry.field(default=False, description="False when the same signed statement was already stored.")
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class RunAddNoteInput:
    run: strawberry.ID
    text: str = strawberry.field(description=f"At most {MAX_NOTE_CHARS} characters.")


@strawberry.type
class RunAddNotePayload:
    note: Note | None = None
    run: Run | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class RunReportIssueInput:
    run: strawberry.ID
    category: str = strawberry.field(description="One of: " + "; ".join(f"{name} ({what})" for name, what in CATEGORIES.items()) + ".")
    text: str = strawberry.field(description=f"What is wrong, at most {MAX_REPORT_CHARS} characters.")


@strawberry.type(description="A stored issue report (its text is read by maintainers, not shown on the run's page).")
class IssueReport:
    id: strawberry.ID
    category: str
    created_at: datetime
    run_digest: str


@strawberry.type
class RunReportIssuePayload:
    report: IssueReport | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def _run(info: Info, global_id: str) -> dict:
    try:
        digest = ids.decode_as(global_id, "Run")
    except ids.BadGlobalId as error:
        raise Refusal("BAD_ID", str(error), "run") from None
    doc = await info.context.loaders.runs.load(digest)
    if doc is None:
        raise Refusal("NOT_FOUND", "no such run", "run")
    return doc


@strawberry.type
class Mutation:
    @strawberry.mutation(
        description="Submit a signed reproduction of a run (partner key). Shown with the run; never changes its evidence level."
    )
    async def run_submit_reproduction(self, info: Info, input: RunSubmitReproductionInput) -> RunSubmitReproductionPayload:
        try:
            key = require_scope(info, Scope.partner)
            run = await _run(info, input.run)
            doc, created = await submit_reproduction(info.context.db, run=run, key=key, envelope_text=input.envelope)
        except Refusal as refusal:
            return RunSubmitReproductionPayload(user_errors=[refusal.error])
        except AttestationError as error:
            return RunSubmitReproductionPayload(user_errors=[UserError(field=error.field, message=str(error), code=error.code)])
        return RunSubmitReproductionPayload(attestation=Attestation.from_doc(doc), run=Run.from_doc(run), created=created)

    @strawberry.mutation(description=f"Add an unsigned note (at most {MAX_NOTE_CHARS} characters) to a run (partner or maintainer key).")
    async def run_add_note(self, info: Info, input: RunAddNoteInput) -> RunAddNotePayload:
        try:
            key = require_scope(info, Scope.partner, Scope.maintainer)
            run = await _run(info, input.run)
            doc = await add_note(info.context.db, run_digest=run["_id"], key=key, text=input.text)
        except Refusal as refusal:
            return RunAddNotePayload(user_errors=[refusal.error])
        except NoteError as error:
            return RunAddNotePayload(user_errors=[UserError(field=error.field, message=str(error), code=error.code)])
        return RunAddNotePayload(note=Note.from_doc(doc), run=Run.from_doc(run))

    @strawberry.mutation(
        description="Report an issue with a run: stored for maintainers, never shown on the run nor changing it. Any key or none; "
        f"rate-limited (RATE_LIMITED): {KEY_LIMIT} an hour per API key; without one, {RUN_LIMIT} an hour per run and "
        f"{ANONYMOUS_LIMIT} an hour in all. Codes: UNAUTHENTICATED (a key that is not valid), BAD_ID, NOT_FOUND, "
        "BAD_USER_INPUT, REPORT_TOO_LONG, RATE_LIMITED."
    )
    async def run_report_issue(self, info: Info, input: RunReportIssueInput) -> RunReportIssuePayload:
        try:
            if info.context.principal is None and info.context.key_presented:
                raise Refusal("UNAUTHENTICATED", "the API key is not valid (send none to report without one)", "authorization")
            run = await _run(info, input.run)
            doc = await report_issue(
                info.context.db, run_digest=run["_id"], key=info.context.principal, category=input.category, text=input.text
            )
        except Refusal as refusal:
            return RunReportIssuePayload(user_errors=[refusal.error])
        except ReportError as error:
            return RunReportIssuePayload(user_errors=[UserError(field=error.field, message=str(error), code=error.code)])
        return RunReportIssuePayload(
            report=IssueReport(
                id=strawberry.ID(doc["_id"]), category=doc["category"], created_at=doc["createdAt"], run_digest=doc["runDigest"]
            )
        )
