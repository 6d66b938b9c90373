"""The schema object: a Federation 2 subgraph with query limits and error masking."""

from __future__ import annotations

import strawberry
from graphql import GraphQLError
from strawberry.schema.config import StrawberryConfig
from strawberry.tools import merge_types
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)

from gateway.settings import Settings
from resolvers.errors import ClientError, should_mask
from resolvers.types.common import LONG_SCALAR, Long
from resolvers.mutation import Mutation as JobMutation
from resolvers.partner_mutations import PartnerMutation
from resolvers.query import Query
from resolvers.subscription import Subscription, SubscriptionsOverWebSocket
from resolvers.types.attestation import Attestation
from resolvers.types.definition import Definition
from resolvers.types.environment import Environment
from resolvers.types.group import ComparisonGroup
from resolvers.types.implementation import Implementation
from resolvers.types.job import BenchmarkJob
from resolvers.types.protocol import Protocol
from resolvers.types.run import Run
from resolvers.types.workload import Workload

Mutation = merge_types("Mutation", (JobMutation, PartnerMutation))

ENTITY_TYPES = [Run, Definition, Workload, Implementation, Protocol, Environment, ComparisonGroup, Attestation, BenchmarkJob]


class KernelIndexSchema(strawberry.federation.Schema):
    def process_errors(self, errors: list[GraphQLError], execution_context=None) -> None:
        # Expected failures (bad input) are answers, not incidents: don't log them.
        unexpected = [e for e in errors if not isinstance(e.original_error, ClientError)]
        if unexpected:
            super().process_errors(unexpected, execution_context)


def build_schema(settings: Settings | None = None) -> strawberry.federation.Schema:
    settings = settings or Settings()
    # The limiter rules are built once: a rule class made per request would defeat the
    # validation cache (its key includes the rules). Extensions are passed as factories.
    rules = [
        *QueryDepthLimiter(max_depth=settings.max_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=settings.max_aliases).validation_rules,
    ]
    extensions = [
        lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
        lambda: ParserCache(maxsize=256),
        lambda: AddValidationRules(rules),
        lambda: ValidationCache(maxsize=256),
        SubscriptionsOverWebSocket,
    ]
    if not settings.debug:
        extensions.append(lambda: MaskErrors(should_mask_error=should_mask))
    return KernelIndexSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        config=StrawberryConfig(scalar_map={Long: LONG_SCALAR}),
        types=ENTITY_TYPES,
        extensions=extensions,
        federation_version="2.9",
    )
