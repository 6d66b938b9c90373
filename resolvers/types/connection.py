"""The one Connection type (Relay style): `Connection[Run]` is the GraphQL type `RunConnection`
with `edges { cursor node }`, `nodes` and `pageInfo`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import strawberry

from resolvers.types.common import PageInfo

T = TypeVar("T")


@strawberry.type
class Edge(Generic[T]):
    cursor: str
    node: T


@strawberry.type
class Connection(Generic[T]):
    edges: list[Edge[T]]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]


def connection(
    docs: Iterable[dict[str, Any]], has_next: bool, node_of: Callable[[dict[str, Any]], Any], cursor_of: Callable[[dict[str, Any]], str]
) -> Connection:
    """A page of documents as a Connection: each document becomes a node and a cursor."""
    edges = [Edge(cursor=cursor_of(doc), node=node_of(doc)) for doc in docs]
    return Connection(edges=edges, page_info=PageInfo(has_next_page=has_next, end_cursor=edges[-1].cursor if edges else None))
