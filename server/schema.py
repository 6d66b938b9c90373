"""The schema objects: the two Federation 2 subgraphs (registry, benchmarks) and the combined
schema of both (what a client sees through the gateway; served in-process by `create_app()`
without a subgraph, and exported as schema.graphql), with query limits and error masking.

All three share one set of Strawberry types. A subgraph shows, of each entity, the fields its
own subgraph resolves (plus the contributed ones in CONTRIBUTED); of another subgraph's entity,
only the key `id`, which the owner resolves by reference.
"""

from __future__ import annotations

import logging
import sys
import time

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.tools import merge_types
from strawberry.types.base import StrawberryObjectDefinition
from strawberry.types.field import StrawberryField

from resolvers.benchmarks.mutation import Mutation as BenchmarksMutation
from resolvers.benchmarks.query import Query as BenchmarksQuery
from resolvers.benchmarks.subscription import Subscription as BenchmarksSubscription
from resolvers.cost_limit import CostLimit
from resolvers.errors import add_code, should_mask
from resolvers.node_types import BENCHMARKS, NODE_TYPES, REGISTRY, entity_classes
from resolvers.registry.mutation import Mutation as RegistryMutation
from resolvers.registry.query import Query as RegistryQuery
from resolvers.registry.subscription import Subscription as RegistrySubscription
from resolvers.types.common import LONG_SCALAR, Long
from server.query_limits import document_limits
from server.settings import Settings
from server.websocket import SubscriptionsOverWebSocket

SUBGRAPHS = (REGISTRY, BENCHMARKS)
ROOTS = {
    REGISTRY: (RegistryQuery, RegistryMutation, RegistrySubscription),
    BENCHMARKS: (BenchmarksQuery, BenchmarksMutation, BenchmarksSubscription),
}
# Fields one subgraph contributes to another subgraph's entity: (type, field) -> subgraph.
CONTRIBUTED = {("Definition", "jobs"): BENCHMARKS, ("Implementation", "jobs"): BENCHMARKS}


def field_owner(type_name: str, field_name: str) -> str | None:
    """The subgraph that resolves this field; None for fields of value types (every subgraph)."""
    if field_name == "id" and type_name in NODE_TYPES:
        return None  # the key: every subgraph that has the entity
    if (type_name, field_name) in CONTRIBUTED:
        return CONTRIBUTED[(type_name, field_name)]
    node_type = NODE_TYPES.get(type_name)
    return node_type.subgraph if node_type else None


log = logging.getLogger("kernelindex.graphql")
SAY_EVERY_S = 30.0
_said: dict[str, float] = {}


def _say_once(line: str) -> None:
    """One `error:` line on the process's stderr (the stack's log) for a database that is down
    or cannot write, at most every SAY_EVERY_S per line: the stall is said, not flooded."""
    now = time.monotonic()
    if now - _said.get(line, -SAY_EVERY_S) >= SAY_EVERY_S:
        _said[line] = now
        print(line, file=sys.stderr, flush=True)


MAX_LOGGED_QUERY = 500


class KernelIndexSchema(strawberry.federation.Schema):
    def __init__(self, *args, subgraph: str | None = None, **kwargs):
        self.subgraph = subgraph  # read by get_fields while the base class builds the schema
        super().__init__(*args, **kwargs)

    def get_fields(self, type_definition: StrawberryObjectDefinition) -> list[StrawberryField]:
        fields = type_definition.fields
        if self.subgraph is None:
            return fields
        return [f for f in fields if field_owner(type_definition.name, f.graphql_name or f.python_name) in (None, self.subgraph)]

    def process_errors(self, errors: list[GraphQLError], execution_context=None) -> None:
        # Every refusal gets a code. Expected failures (bad input, syntax, validation) are
        # answers, not incidents: not logged.
        # The rest are logged with the query cut short: a client's 1 MB query is not 1 MB of log.
        query = getattr(execution_context, "query", None) or ""
        shown = query[:MAX_LOGGED_QUERY] + (f"… ({len(query):,} characters)" if len(query) > MAX_LOGGED_QUERY else "")
        for error in errors:
            add_code(error)
            code = (error.extensions or {}).get("code")
            if code in ("STORAGE_UNAVAILABLE", "DATABASE_UNAVAILABLE"):
                _say_once(f"error: {error.message} ({code})")
            if should_mask(error):
                log.error("%s at %s in query %r", error.message[:500], error.path, shown, exc_info=error.original_error)


def _roots(subgraph: str | None) -> tuple[type, type, type]:
    names = (REGISTRY, BENCHMARKS) if subgraph is None else (subgraph,)
    query, mutation, subscription = zip(*(ROOTS[n] for n in names))
    return (merge_types("Query", query), merge_types("Mutation", mutation), merge_types("Subscription", subscription))


def build_schema(settings: Settings | None = None, subgraph: str | None = None) -> strawberry.federation.Schema:
    """`subgraph`: "registry" or "benchmarks"; None: both in one schema."""
    if subgraph is not None and subgraph not in SUBGRAPHS:
        raise ValueError(f"unknown subgraph {subgraph!r}; known: {', '.join(SUBGRAPHS)}")
    settings = settings or Settings()
    # The limiter rules are built once: a rule class made per request would defeat the
    # validation cache (its key includes the rules). Extensions are passed as factories.
    rules = [
        *QueryDepthLimiter(max_depth=settings.max_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=settings.max_aliases).validation_rules,
        document_limits(settings.max_fields, settings.max_directives, settings.max_fragments),
    ]
    extensions = [
        lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
        lambda: ParserCache(maxsize=256),
        lambda: AddValidationRules(rules),
        lambda: ValidationCache(maxsize=256),
        CostLimit,  # after ValidationCache: an invalid document is reported as invalid
        SubscriptionsOverWebSocket,
    ]
    if not settings.debug:
        extensions.append(lambda: MaskErrors(should_mask_error=should_mask))
    query, mutation, subscription = _roots(subgraph)
    # Every entity is listed, so each subgraph can return (and the registry's `node` can name)
    # any entity by key; the ones it does not own show only their `id`.
    return KernelIndexSchema(
        query=query,
        mutation=mutation,
        subscription=subscription,
        config=StrawberryConfig(scalar_map={Long: LONG_SCALAR}),
        types=entity_classes(),
        extensions=extensions,
        federation_version="2.9",
        subgraph=subgraph,
    )
