"""Limits on the size of a GraphQL document that graphql-core and Strawberry's limiters do not
cover: fields, directives and fragment definitions (the same numbers as the gateway's,
server/settings.py)."""

from __future__ import annotations

from graphql import GraphQLError, ValidationRule


def document_limits(max_fields: int, max_directives: int, max_fragments: int) -> type[ValidationRule]:
    """A validation rule refusing a document with more fields, directives or fragment definitions."""

    class DocumentLimits(ValidationRule):
        def __init__(self, context):
            super().__init__(context)
            self.counts = {"fields": 0, "directives": 0, "fragments": 0}

        def enter_field(self, *_):
            self.counts["fields"] += 1

        def enter_directive(self, *_):
            self.counts["directives"] += 1

        def enter_fragment_definition(self, *_):
            self.counts["fragments"] += 1

        def leave_document(self, *_):
            for what, limit in (("fields", max_fields), ("directives", max_directives), ("fragments", max_fragments)):
                if self.counts[what] > limit:
                    noun = "defines" if what == "fragments" else "has"
                    self.report_error(GraphQLError(f"the document {noun} {self.counts[what]} {what}; at most {limit}"))
                    return

    return DocumentLimits
