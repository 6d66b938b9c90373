"""Demand control: refuse an operation whose estimated cost is over MAX_COST, before it runs.

The estimate follows Federation 2.9's `@cost` / `@listSize` the way Hive Gateway's demand control
computes it, so the subgraph and the gateway agree (gateway/gateway.config.mjs sets the same
maximum and default list size):

- each field costs its `@cost(weight)` plus its type's: 1 for an object, interface or union, 0
  for a scalar or enum;
- that cost is multiplied by the list size of the field and of every field above it: a
  `@listSize(slicingArguments: ["first"], sizedFields: [...])` connection multiplies its sized
  fields (`edges`, `nodes`) by the `first` the client asked for (or its default);
  `@listSize(assumedSize: N)` is N; another list is DEFAULT_LIST_SIZE;
- a mutation adds MUTATION_COST.

So `{ runs(first: 20) { nodes { group { runs(first: 20) { nodes { id } } } } } }` costs
1 + 20 + 20 + 20 + 400 = 461, and each further level multiplies by 20. Any schema adds
`CostLimit` to its extensions (after ValidationCache, so an invalid document is reported as
invalid); connection fields are marked with `PAGE`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    is_composite_type,
    value_from_ast_untyped,
)
from strawberry.extensions import SchemaExtension
from strawberry.federation.schema_directives import Cost, ListSize

from resolvers.errors import ClientError

MAX_COST = 5_000
DEFAULT_LIST_SIZE = 10
MUTATION_COST = 10

# A keyset connection: `first` items of `edges` and of `nodes`.
PAGE = ListSize(slicing_arguments=["first"], sized_fields=["edges", "nodes"], require_one_slicing_argument=False)


# Bytes count too: a large JSON value (a manifest, a source's raw block, aggregates) or a list of
# raw samples costs about one unit per KiB it typically carries, instead of 0 as any scalar. A
# run's manifest in the bundled data is 17-19 KB (`{ runs(first: 20) { nodes { manifest } } }`
# answers 370 KB), so 30 aliases of 100 manifests (15 MB) are refused before they are built; the
# largest answer within MAX_COST is about 5 MB.
MANIFEST_KIB = 16
SMALL_JSON_KIB = 2


def weighs(kib: int) -> list[Cost]:
    """The directives of a field whose value is about `kib` KiB."""
    return [Cost(weight=kib)]


def assumed_size(size: int) -> ListSize:
    """A list without a page argument whose length is bounded by the data (cases of a run)."""
    return ListSize(assumed_size=size)


def _directives(field: GraphQLField) -> list[Any]:
    definition = (field.extensions or {}).get("strawberry-definition")
    return list(getattr(definition, "directives", None) or [])


def _list_depth(type_: Any) -> int:
    depth = 0
    while isinstance(type_, (GraphQLList, GraphQLNonNull)):
        depth += isinstance(type_, GraphQLList)
        type_ = type_.of_type
    return depth


class _Estimator:
    def __init__(self, schema: GraphQLSchema, document: DocumentNode, variables: dict[str, Any] | None):
        self.schema = schema
        self.variables = variables or {}
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self.defaults: dict[str, Any] = {}  # the operation's variables' defaults

    def selection_set(
        self, selections: SelectionSetNode | None, parent: Any, factor: int, sized: dict[str, int], seen: frozenset[str]
    ) -> int:
        if selections is None or parent is None:
            return 0
        total = 0
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                total += self.field(selection, parent, factor, sized, seen)
            elif isinstance(selection, InlineFragmentNode):
                condition = self.schema.get_type(selection.type_condition.name.value) if selection.type_condition else parent
                total += self.selection_set(selection.selection_set, condition, factor, sized, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is not None and name not in seen:  # a fragment cycle is a validation error
                    condition = self.schema.get_type(fragment.type_condition.name.value)
                    total += self.selection_set(fragment.selection_set, condition, factor, sized, seen | {name})
        return total

    def field(self, node: FieldNode, parent: Any, factor: int, sized: dict[str, int], seen: frozenset[str]) -> int:
        name = node.name.value
        fields = getattr(parent, "fields", None)
        if name.startswith("__") or not fields or name not in fields:
            return 0  # introspection, or an unknown field (validation reports it)
        definition = fields[name]
        directives = _directives(definition)
        weight = sum(d.weight for d in directives if isinstance(d, Cost))
        named = get_named_type(definition.type)
        weight += 1 if is_composite_type(named) else 0
        list_size = next((d for d in directives if isinstance(d, ListSize)), None)
        own, children_sized = 1, {}
        if name in sized:
            own = sized[name]
        elif list_size is not None and list_size.slicing_arguments:
            asked = max((self.argument(definition, node, a) for a in list_size.slicing_arguments), default=0)
            slice_size = max(asked, 1)
            if list_size.sized_fields:
                children_sized = dict.fromkeys(list_size.sized_fields, slice_size)
            else:
                own = slice_size
        elif list_size is not None and list_size.assumed_size:
            own = list_size.assumed_size
        elif _list_depth(definition.type):
            own = DEFAULT_LIST_SIZE * _list_depth(definition.type)
        factor *= own
        return weight * factor + self.selection_set(node.selection_set, named, factor, children_sized, seen)

    def argument(self, definition: GraphQLField, node: FieldNode, name: str) -> int:
        """An integer argument as given (literal or variable), else its default; 0 when it is
        not an integer (coercion reports that)."""
        given = next((a.value for a in node.arguments or () if a.name.value == name), None)
        if isinstance(given, IntValueNode):
            value = int(given.value)
        elif isinstance(given, VariableNode):
            # not sent: the variable's default in the operation, else the argument's own default
            value = self.variables.get(given.name.value, self.defaults.get(given.name.value, definition.args[name].default_value))
        elif given is None and name in definition.args:
            value = definition.args[name].default_value
        else:
            value = None
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    def operation(self, operation: OperationDefinitionNode) -> int:
        root = {
            OperationType.QUERY: self.schema.query_type,
            OperationType.MUTATION: self.schema.mutation_type,
            OperationType.SUBSCRIPTION: self.schema.subscription_type,
        }[operation.operation]
        extra = MUTATION_COST if operation.operation is OperationType.MUTATION else 0
        self.defaults = {
            v.variable.name.value: value_from_ast_untyped(v.default_value) for v in operation.variable_definitions or () if v.default_value
        }
        return extra + self.selection_set(operation.selection_set, root, 1, {}, frozenset())


def estimate_cost(
    schema: GraphQLSchema, document: DocumentNode, operation_name: str | None = None, variables: dict[str, Any] | None = None
) -> int:
    """The estimated cost of the operation that would run (the named one, or the only one)."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        operations = [o for o in operations if o.name is not None and o.name.value == operation_name]
    if len(operations) != 1:
        return 0  # which operation runs is not decided: execution reports it
    return _Estimator(schema, document, variables).operation(operations[0])


# Estimates by (schema, query text, operation, integer variables): only integer variables (page
# sizes) enter an estimate, so a document asked again with another ID costs a dictionary lookup
# instead of a walk of its AST (0.35-0.7 ms for the dossier's).
_ESTIMATES: OrderedDict[tuple, int] = OrderedDict()
_ESTIMATES_KEPT = 512


def _cached_cost(schema: GraphQLSchema, query: str, document: DocumentNode, operation_name: str | None, variables: dict | None) -> int:
    sizes = tuple(sorted((k, v) for k, v in (variables or {}).items() if isinstance(v, int) and not isinstance(v, bool)))
    key = (id(schema), query, operation_name, sizes)
    cost = _ESTIMATES.get(key)
    if cost is None:
        cost = _ESTIMATES[key] = estimate_cost(schema, document, operation_name, variables)
        if len(_ESTIMATES) > _ESTIMATES_KEPT:
            _ESTIMATES.popitem(last=False)
    return cost


class CostLimit(SchemaExtension):
    """Before validation completes (and so before execution), refuse with COST_LIMIT."""

    def __init__(self, *, max_cost: int = MAX_COST, execution_context=None):
        super().__init__(execution_context=execution_context)
        self.max_cost = max_cost

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is not None and not context.pre_execution_errors:
            variables = context.variables if isinstance(context.variables, dict) else None
            if isinstance(context.query, str):
                cost = _cached_cost(context.schema._schema, context.query, context.graphql_document, context.operation_name, variables)
            else:
                cost = estimate_cost(context.schema._schema, context.graphql_document, context.operation_name, variables)
            if cost > self.max_cost:
                message = f"the operation's estimated cost is {cost:,}, above the maximum of {self.max_cost:,}; ask for smaller pages (first) or fewer nested lists"
                context.pre_execution_errors = [
                    GraphQLError(
                        message,
                        original_error=ClientError(message, "COST_LIMIT"),
                        extensions={"code": "COST_LIMIT", "cost": {"estimated": cost, "max": self.max_cost}},
                    )
                ]
        yield
