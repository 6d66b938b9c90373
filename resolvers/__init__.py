"""Strawberry types, queries, mutations, subscriptions and per-request DataLoaders.

Thin by design: GraphQL in, store/registry calls out.
"""
