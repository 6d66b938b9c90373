"""Note: an unsigned remark on a run by a partner or maintainer, shown apart from reproductions."""

from __future__ import annotations

from datetime import datetime

import strawberry

from resolvers import ids
from resolvers.types.node import Node
from store.read_models import NoteDocument


@strawberry.type(description="An unsigned remark on a run. It never changes the run's evidence level.")
class Note(Node):
    id: strawberry.ID
    text: str
    author: str = strawberry.field(description="The name of the API key that wrote it.")
    author_scope: str = strawberry.field(description='"partner" or "maintainer".')
    created_at: datetime
    run_digest: str

    @classmethod
    def from_doc(cls, doc: NoteDocument) -> Note:
        return cls(
            id=strawberry.ID(ids.encode("Note", doc.id)),
            text=doc.text,
            author=doc.author.name,
            author_scope=doc.author.scope,
            created_at=doc.created_at,
            run_digest=doc.run_digest,
        )
