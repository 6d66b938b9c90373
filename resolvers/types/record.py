"""RecordChange: one change of a comparison group's #1 and its cause (store/records.py)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from resolvers.context import Info

if TYPE_CHECKING:
    from resolvers.types.group import ComparisonGroup
    from resolvers.types.run import Run


@strawberry.enum(description="Why a group's #1 changed.")
class RecordCause(Enum):
    NEW_RUN = "new_run"
    CORRECTION = "correction"
    SUPERSESSION = "supersession"
    RETRACTION = "retraction"


@strawberry.type(description="A group's #1 changed: the new #1 (null when none is left), the one before, and why.")
class RecordChange:
    seq: int = strawberry.field(description="The change's place in the event log (the group.changed event's seq).")
    at: datetime
    cause: RecordCause
    run_digest: str | None
    previous_digest: str | None
    group_key: strawberry.Private[str]

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> RecordChange:
        return cls(
            seq=doc["seq"],
            at=doc["at"],
            cause=RecordCause(doc["cause"]),
            run_digest=doc.get("runDigest"),
            previous_digest=doc.get("previousDigest"),
            group_key=doc["groupKey"],
        )

    @strawberry.field(description="The #1 from this change on.")
    async def run(self, info: Info) -> Annotated[Run, strawberry.lazy("resolvers.types.run")] | None:
        from resolvers.types.run import Run

        doc = await info.context.loaders.runs.load(self.run_digest) if self.run_digest else None
        return Run.from_doc(doc) if doc else None

    @strawberry.field(description="The #1 before this change.")
    async def previous(self, info: Info) -> Annotated[Run, strawberry.lazy("resolvers.types.run")] | None:
        from resolvers.types.run import Run

        doc = await info.context.loaders.runs.load(self.previous_digest) if self.previous_digest else None
        return Run.from_doc(doc) if doc else None

    @strawberry.field
    async def group(self, info: Info) -> Annotated[ComparisonGroup, strawberry.lazy("resolvers.types.group")] | None:
        from resolvers.types.group import ComparisonGroup

        doc = await info.context.loaders.groups.load(self.group_key)
        return ComparisonGroup.from_doc(doc) if doc else None
