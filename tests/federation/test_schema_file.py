from pathlib import Path

from server.schema import build_schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema.graphql"


def test_committed_schema_graphql_is_current():
    live = build_schema().as_str() + "\n"
    assert SCHEMA_FILE.read_text() == live, "schema.graphql is stale: run `kernelindex export-schema > schema.graphql`"
