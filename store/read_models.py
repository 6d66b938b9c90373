"""Typed read models of the store's own (non-manifest) documents: what the store hands out.

Each model is the one place a document's shape is read: the store's read paths (the DataLoaders'
batched finds in store/lookups.py, pages, the event stream's documents) return these models, and
the GraphQL types read attributes. A document is written by its store module (store/groups.py,
store/notes.py); its model ignores fields it does not name, so a writer may add one first.

`read(collection, doc)` gives the model of a collection's document, or the document itself for
collections without one yet (manifest collections: the manifest models are being moved to the
v1alpha1 format; runs; jobs, attestations, events, keys: still dicts).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from registry.ranking import RankRule


class ReadModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class GroupGpu(ReadModel):
    product: str
    architecture: str


class ComparisonGroupDocument(ReadModel):
    """`comparison_groups`: one group's identity, rank rule, size and #1 (store/groups.py)."""

    key: str = Field(alias="_id")
    definition_digest: str = Field(alias="definitionDigest")
    workload_digest: str = Field(alias="workloadDigest")
    protocol_digest: str | None = Field(None, alias="protocolDigest")
    environment_digest: str | None = Field(None, alias="environmentDigest")
    family: str
    family_version: str = Field(alias="familyVersion")
    gpu: GroupGpu
    rank_rule: RankRule = Field(alias="rankRule")
    title: str = ""
    size: int = 0
    ranked_size: int = Field(0, alias="rankedSize")
    leader_digest: str | None = Field(None, alias="leaderDigest")
    created_at: datetime | None = Field(None, alias="createdAt")


class NoteAuthor(ReadModel):
    name: str
    key_id: str = Field(alias="keyId")
    scope: str


class NoteDocument(ReadModel):
    """`notes`: an unsigned remark on a run (store/notes.py)."""

    id: str = Field(alias="_id")
    run_digest: str = Field(alias="runDigest")
    text: str
    author: NoteAuthor
    created_at: datetime = Field(alias="createdAt")
    seq: int


READ_MODELS: dict[str, type[ReadModel]] = {
    "comparison_groups": ComparisonGroupDocument,
    "notes": NoteDocument,
}


def read(collection: str, doc: dict[str, Any] | None) -> Any:
    """The read model of `collection`'s document (None stays None; a collection without a model
    gives the document as stored)."""
    model = READ_MODELS.get(collection)
    if doc is None or model is None:
        return doc
    return model.model_validate(doc)
