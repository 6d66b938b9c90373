"""Property-based fuzzing of every query and mutation with Schemathesis (generated from the live
schema, sent over HTTP to a real server): no input may produce a server error or an unexpected
(masked) error — bad input must be answered as bad input."""

import asyncio
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from server.bootstrap import bootstrap
from server.settings import Settings
from store.keys import Scope, create_key

DATA = Path(__file__).resolve().parents[2] / "data"

pytestmark = pytest.mark.slow


async def test_no_generated_operation_breaks_the_server(db, mongo_uri, live_site):
    await bootstrap(mongo_uri, Settings(database=db.name), DATA)
    _, secret = await create_key(db, name="fuzz", scope=Scope.maintainer)
    schema = schemathesis.graphql.from_url(f"{live_site}/graphql")
    problems, calls = [], []
    labels = []
    for result in schema.get_all_operations():
        operation = result.ok()
        labels.append(operation.label)

        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            calls.append(1)
            response = case.call(headers={"Authorization": f"Bearer {secret}"})
            try:
                messages = [e.get("message") for e in response.json().get("errors", [])]
            except ValueError:
                messages = []
            if response.status_code >= 500 or "Unexpected error." in messages:
                problems.append((case.operation.label, response.status_code, messages))

        # Hypothesis drives a synchronous HTTP client: run it off the test's event loop.
        await asyncio.to_thread(check)
    assert {"Query.runs", "Mutation.benchmarkJobRequest", "Mutation.runSubmitReproduction"} <= set(labels)
    assert len(calls) >= 100
    assert problems == []
