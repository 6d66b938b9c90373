"""The KernelIndex v1alpha1 format, exactly: one strict pydantic model per kind, built from the
format's own JSON Schemas (registry/schemas/, copied from SamMausberg/KernelIndex; NOTICE there).

Every field, type, pattern, length, range, enum and `required` of the schemas is enforced, and an
unknown field anywhere is refused with its path (`spec.timing.p50: unknown field`). The format's
definitions (zod, apps/web/src/schemas/{kinds,common}.ts upstream) hold a few rules the generated
JSON Schemas cannot say; they are written again here (`_FIELD_RULES`, `_MODEL_RULES`):

- a duration is an integer nanosecond count or a string like "0.008 ms"; the string is normalized
  to integer nanoseconds, and one that is not a whole number of them is refused (ambiguous);
- set-like lists (an implementation's supported architectures, products, axes, dtypes, layouts)
  are sorted and de-duplicated;
- repository, homepage and source-reference URLs are https;
- an operation argument is exactly one of tensor or scalar; a constant axis has a value, a
  derived one an expression; `latencyNs` has a median or a mean.

The digest of a manifest is sha256 over RFC 8785 JSON of {apiVersion, kind, spec} with the spec
as normalized here (registry/digest.py), which is how the seed system computes it: every digest
of its public catalog export is reproduced (scripts/verify_format.py says how that was checked).
"""

from __future__ import annotations

import json
import keyword
import math
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from registry.limits import LimitError, check_limits
from registry.manifests import ManifestError

API_VERSION = "kernelindex.dev/v1alpha1"
SCHEMA_DIR = Path(__file__).with_name("schemas")
EXAMPLES_DIR = Path(__file__).with_name("examples")

# kind -> schema file stem (registry/schemas/{stem}.v1alpha1.schema.json)
SCHEMA_FILES = {
    "OperationSpec": "operation-spec",
    "WorkloadCase": "workload-case",
    "WorkloadSuite": "workload-suite",
    "SoftwareProject": "software-project",
    "ImplementationRevision": "implementation-revision",
    "BenchmarkProtocol": "benchmark-protocol",
    "ExecutionEnvironment": "execution-environment",
    "BenchmarkRun": "benchmark-run",
    "ModelRevision": "model-revision",
    "ServingStackRevision": "serving-stack-revision",
    "ServingConfiguration": "serving-configuration",
    "ServingWorkload": "serving-workload",
    "ServingRun": "serving-run",
}
KERNEL_KINDS = (
    "OperationSpec",
    "WorkloadCase",
    "WorkloadSuite",
    "SoftwareProject",
    "ImplementationRevision",
    "BenchmarkProtocol",
    "ExecutionEnvironment",
    "BenchmarkRun",
)
# Serving evidence: stored and listed with verified digests, never ranked with kernels.
SERVING_KINDS = ("ModelRevision", "ServingStackRevision", "ServingConfiguration", "ServingWorkload", "ServingRun")
WORKLOAD_KINDS = ("WorkloadCase", "WorkloadSuite")

DIGEST_RE = "^sha256:[0-9a-f]{64}$"


class FormatError(ManifestError):
    """A manifest is not valid v1alpha1; `problems` holds (field path, reason) pairs."""


# ---------------------------------------------------------------- rules beyond the JSON Schemas

_DURATION_RE = re.compile(r"^(\d+(?:\.\d+)?)\s?(ns|us|µs|ms|s)$")
_NS_PER_UNIT = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_MAX_SAFE_INTEGER = 9007199254740991


def duration_ns(value: int | str) -> int:
    """An integer nanosecond count, or a "<number> ns|us|µs|ms|s" string converted to one (the
    arithmetic is IEEE double, as upstream's JavaScript does it, so both agree on what is exact)."""
    if isinstance(value, int):
        return value
    match = _DURATION_RE.match(value)
    if match is None:  # the schema's pattern was checked first; kept for direct callers
        raise PydanticCustomError("duration", "expected '<number> ns|us|ms|s'")
    ns = float(match.group(1)) * _NS_PER_UNIT[match.group(2)]
    if not ns.is_integer() or abs(ns) > _MAX_SAFE_INTEGER:
        raise PydanticCustomError("ambiguous_duration", "ambiguous duration: {value} is not an integer nanosecond count", {"value": value})
    return int(ns)


def _set_like(values: list[str]) -> list[str]:
    return sorted(set(values))


def _https_url(value: str) -> str:
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if parts is None or parts.scheme != "https" or not parts.netloc:
        raise PydanticCustomError("https_url", "expected an https URL")
    return value


def _one_of_tensor_or_scalar(model: BaseModel) -> BaseModel:
    if (model.tensor is None) == (model.scalar is None):
        raise PydanticCustomError("tensor_or_scalar", "an argument is exactly one of tensor or scalar")
    return model


def _axis_complete(model: BaseModel) -> BaseModel:
    if model.role == "constant" and model.value is None:
        raise PydanticCustomError("axis", "a constant axis requires a value")
    if model.role == "derived" and model.expression is None:
        raise PydanticCustomError("axis", "a derived axis requires an expression")
    return model


def _median_or_mean(model: BaseModel) -> BaseModel:
    if model.median is None and model.mean is None:
        raise PydanticCustomError("latency", "latencyNs requires median or mean")
    return model


_LATENCY_STATISTICS = ("median", "mean", "p05", "p95", "minimum", "maximum", "mad")
_SUPPORT_SETS = ("hardwareArchitectures", "productsTested", "axes", "dtypes", "layouts")

# (kind or "*", path) -> validator applied after the schema's own checks. Paths: "." between
# properties, "*" for a map's values, "[]" for list items.
_FIELD_RULES: dict[tuple[str, str], Callable[[Any], Any]] = {
    **{("BenchmarkRun", f"spec.timing.latencyNs.{name}"): duration_ns for name in _LATENCY_STATISTICS},
    ("BenchmarkRun", "spec.timing.latencyNs.confidence95[]"): duration_ns,
    ("BenchmarkProtocol", "spec.measurement.warmupDuration"): duration_ns,
    **{("ImplementationRevision", f"spec.support.{name}"): _set_like for name in _SUPPORT_SETS},
    ("*", "metadata.sourceRefs[].url"): _https_url,
    ("SoftwareProject", "spec.repository"): _https_url,
    ("SoftwareProject", "spec.homepage"): _https_url,
    ("ImplementationRevision", "spec.projectRevision.repository"): _https_url,
    ("ImplementationRevision", "spec.buildVariants[].install.repository"): _https_url,
    ("BenchmarkProtocol", "spec.harness.repository"): _https_url,
    ("BenchmarkRun", "spec.evidence.harness.repository"): _https_url,
    ("ServingStackRevision", "spec.project.repository"): _https_url,
}
_MODEL_RULES: dict[tuple[str, str], Callable[[BaseModel], BaseModel]] = {
    ("OperationSpec", "spec.axes.*"): _axis_complete,
    ("OperationSpec", "spec.inputs[]"): _one_of_tensor_or_scalar,
    ("OperationSpec", "spec.outputs[]"): _one_of_tensor_or_scalar,
    ("BenchmarkRun", "spec.timing.latencyNs"): _median_or_mean,
}


def _rule(table: dict, kind: str, path: str):
    return table.get((kind, path)) or table.get(("*", path))


# ---------------------------------------------------------------- JSON Schema -> pydantic


class FormatObject(BaseModel):
    """An object of the format: strict (an unknown field is refused), frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)

    def to_json(self) -> dict[str, Any]:
        """The object as given (normalized), without fields that were not given."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _check_string(schema: dict) -> Callable[[str], str]:
    pattern = re.compile(schema["pattern"], re.ASCII) if "pattern" in schema else None
    max_length, min_length = schema.get("maxLength"), schema.get("minLength")
    source = schema.get("pattern")

    def check(value: str) -> str:
        if max_length is not None and len(value) > max_length:
            raise PydanticCustomError("too_long", "at most {n} characters", {"n": max_length})
        if min_length is not None and len(value) < min_length:
            raise PydanticCustomError("too_short", "at least {n} characters", {"n": min_length})
        if pattern is not None and not pattern.search(value):
            if source == DIGEST_RE:
                raise PydanticCustomError("digest", "expected sha256:<64 lowercase hex>")
            raise PydanticCustomError("pattern", "must match {pattern}", {"pattern": source})
        return value

    return check


def _check_number(schema: dict) -> Callable[[float], float]:
    low, high = schema.get("minimum"), schema.get("maximum")
    above = schema.get("exclusiveMinimum")

    def check(value: float) -> float:
        if isinstance(value, float) and not math.isfinite(value):
            raise PydanticCustomError("finite", "must be a finite number")
        if low is not None and value < low:
            raise PydanticCustomError("minimum", "must be >= {n}", {"n": low})
        if high is not None and value > high:
            raise PydanticCustomError("maximum", "must be <= {n}", {"n": high})
        if above is not None and value <= above:
            raise PydanticCustomError("exclusive_minimum", "must be > {n}", {"n": above})
        return value

    return check


def _integral(value: Any) -> Any:
    """JSON has one number type: 5.0 is the integer 5 (as in JSON Schema and upstream's
    JavaScript, where both print as 5 and digest alike)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _class_name(kind: str, path: str) -> str:
    parts = [kind] + [part for part in re.split(r"[.\[\]*]+", path) if part]
    return "".join(part[:1].upper() + part[1:] for part in parts)


def _field_name(name: str) -> str:
    if keyword.iskeyword(name) or hasattr(BaseModel, name) or name.startswith("model_") or not name.isidentifier():
        return re.sub(r"\W", "_", name) + "_"
    return name


def _annotation(kind: str, schema: dict, path: str) -> Any:
    anno = _base_annotation(kind, schema, path)
    rule = _rule(_FIELD_RULES, kind, path)
    return Annotated[anno, AfterValidator(rule)] if rule else anno


def _base_annotation(kind: str, schema: dict, path: str) -> Any:
    if "anyOf" in schema:
        members = tuple(_annotation(kind, member, path) for member in schema["anyOf"])
        return Union[members]  # noqa: UP007 (built from a tuple)
    if "const" in schema:
        return Literal[schema["const"]]
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind_of = schema.get("type")
    if kind_of == "string":
        return Annotated[StrictStr, AfterValidator(_check_string(schema))]
    if kind_of == "integer":
        return Annotated[StrictInt, BeforeValidator(_integral), AfterValidator(_check_number(schema))]
    if kind_of == "number":
        return Annotated[StrictInt | StrictFloat, AfterValidator(_check_number(schema))]
    if kind_of == "boolean":
        return StrictBool
    if kind_of == "array":
        if "prefixItems" in schema:
            return tuple[tuple(_annotation(kind, item, f"{path}[]") for item in schema["prefixItems"])]
        item = _annotation(kind, schema["items"], f"{path}[]")
        limits = {}
        if "minItems" in schema:
            limits["min_length"] = schema["minItems"]
        if "maxItems" in schema:
            limits["max_length"] = schema["maxItems"]
        return Annotated[list[item], Field(**limits)] if limits else list[item]
    if kind_of == "object":
        if "properties" in schema:
            return _object_model(kind, schema, path)
        values = schema.get("additionalProperties")
        if not isinstance(values, dict):
            raise TypeError(f"{kind} {path}: an object without properties needs an additionalProperties schema")
        key = _base_annotation(kind, schema.get("propertyNames", {"type": "string"}), f"{path}<key>")
        return dict[key, _annotation(kind, values, f"{path}.*")]
    raise TypeError(f"{kind} {path}: unsupported schema {schema}")


def _object_model(kind: str, schema: dict, path: str, base: type[FormatObject] = FormatObject) -> type[FormatObject]:
    if schema.get("additionalProperties", False) is not False:
        raise TypeError(f"{kind} {path}: an object with properties must refuse others")
    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for name, sub in schema["properties"].items():
        anno = _annotation(kind, sub, f"{path}.{name}" if path else name)
        python_name = _field_name(name)
        default = ... if name in required else None
        fields[python_name] = (anno, Field(default, alias=name) if python_name != name else default)
    validators = {}
    rule = _rule(_MODEL_RULES, kind, path)
    if rule is not None:
        validators["format_rule"] = model_validator(mode="after")(lambda model, _rule=rule: _rule(model))
    return create_model(_class_name(kind, path or "Manifest"), __base__=base, __validators__=validators, **fields)


class FormatManifest(FormatObject):
    """A manifest of one kind: {apiVersion, kind, metadata, spec}. Subclassed per kind."""

    KIND: ClassVar[str] = ""

    def identity(self) -> dict[str, Any]:
        """What the digest covers: {apiVersion, kind, spec} as normalized JSON."""
        return {"apiVersion": self.apiVersion, "kind": self.kind, "spec": self.spec.to_json()}


@cache
def schema_of(kind: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{SCHEMA_FILES[kind]}.v1alpha1.schema.json").read_text(encoding="utf-8"))


@cache
def model_of(kind: str) -> type[FormatManifest]:
    """The manifest model of a kind (built once from its schema)."""
    manifest = _object_model(kind, schema_of(kind), "", base=FormatManifest)
    manifest.KIND = kind
    return manifest


# ---------------------------------------------------------------- parsing


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in error.errors():
        # A union's members add their own name to the path (e.g. `int`, `function-after[...]`);
        # keep only the manifest's own keys and indexes.
        loc = [str(part) for part in item["loc"] if isinstance(part, int) or not _is_type_tag(str(part))]
        reason = "unknown field" if item["type"] == "extra_forbidden" else item["msg"]
        if item["type"] == "missing":
            reason = "required"
        problem = (".".join(loc), reason)
        if problem not in out:
            out.append(problem)
    # A value refused by every member of a union is reported by each; where one member got past
    # the type check, its reason is the one that explains the refusal.
    specific = {path for path, reason in out if not reason.startswith("Input should be")}
    return [(path, reason) for path, reason in out if path not in specific or not reason.startswith("Input should be")]


def _is_type_tag(part: str) -> bool:
    return part in {"int", "float", "str", "bool", "list", "dict", "tuple"} or part.startswith(
        ("function-after[", "function-before[", "literal[", "constrained-", "json-or-python[", "tagged-union[")
    )


def parse_format_manifest(data: Any) -> FormatManifest:
    """Validate a manifest of any v1alpha1 kind; raise FormatError naming each bad field."""
    if not isinstance(data, dict):
        raise FormatError([("", "a manifest must be a JSON object")])
    try:
        check_limits(data)
    except LimitError as error:
        raise FormatError([(error.path, error.reason)]) from None
    if data.get("apiVersion") != API_VERSION:
        raise FormatError([("apiVersion", f"must be {API_VERSION!r}")])
    kind = data.get("kind")
    if kind not in SCHEMA_FILES:
        raise FormatError([("kind", f"must be one of {', '.join(SCHEMA_FILES)}")])
    try:
        return model_of(kind).model_validate(data)
    except ValidationError as error:
        raise FormatError(_problems(error)) from None


def format_digest(manifest: FormatManifest) -> str:
    from registry.digest import digest_of

    return digest_of(manifest.identity())


def make_format_manifest(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> FormatManifest:
    """Build and validate a manifest in code (loaders, the harness); FormatError names each bad
    field."""
    return parse_format_manifest({"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec})
