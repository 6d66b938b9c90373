"""`kernelindex mcp`: read-only MCP tools for coding agents, a thin layer over our GraphQL API.

Every tool sends one GraphQL document (mcp_server/queries.py) through client/api.py, never the
database, and returns one JSON document with permalinks (`permalink` fields point at the web
pages: `{public}/runs/{digest}`, `/groups/{id}`, `/operations/{name}`). Two tools answer without
the API: `validate_manifest` and `get_schema` (registry/format.py, the v1alpha1 format); and
`verify_attestation` checks a stored envelope's subject (and its signature, given the signer's
public key) with registry/dsse.py.

Failures are MCP errors (JSON-RPC), with our code in `data.code` (and the field at fault in
`data.field`): INVALID_PARAMS (-32602) for the caller's input (BAD_USER_INPUT, BAD_ID,
NOT_FOUND, INVALID_MANIFEST, ...), INTERNAL_ERROR (-32603) when the API cannot be reached.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote

import yaml
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations
from pydantic import Field

from client.api import ApiClient, ApiError
from mcp_server import queries

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
MAX_MANIFEST_BYTES = 1 << 20  # validate_manifest: 1 MiB
MAX_BATCH = 20
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)

Doc = dict[str, Any]


class _ManifestYaml(yaml.SafeLoader):
    """YAML as the v1alpha1 format reads it: a timestamp stays the text it is."""


_ManifestYaml.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class ToolFailure(MCPError):
    """One of our refusals as an MCP error: `data` carries our code and the field at fault."""

    def __init__(self, code: str, message: str, field: str | None = None, rpc_code: int = INVALID_PARAMS, **extra: Any):
        super().__init__(code=rpc_code, message=message, data={"code": code, "field": field, **extra})


class Registry:
    """The API the tools read, and where permalinks point."""

    def __init__(self, api: ApiClient, public_url: str):
        self.api = api
        self.public = public_url.rstrip("/")

    def query(self, document: str, variables: Doc | None = None) -> Doc:
        try:
            return self.api.query(document, variables or {})
        except ApiError as error:
            code = next((c for c in error.codes if c), "API_ERROR")
            rpc = INTERNAL_ERROR if code in ("UNAVAILABLE", "API_ERROR", "INTERNAL_SERVER_ERROR") else INVALID_PARAMS
            raise ToolFailure(code, str(error), rpc_code=rpc) from None

    def every_definition(self, document: str, first: int) -> list[Doc]:
        """Every definition, by name, through searchDefinitions pages of `first`."""
        found: list[Doc] = []
        after = None
        while True:
            page = self.query(document, {"first": first, "after": after})["searchDefinitions"]
            found.extend(page["nodes"])
            if not page["pageInfo"]["hasNextPage"]:
                return found
            after = page["pageInfo"]["endCursor"]

    def operation_link(self, name: str) -> str:
        return f"{self.public}/operations/{quote(name, safe='')}"

    def group_link(self, group_id: str) -> str:
        return f"{self.public}/groups/{group_id}"

    def run_link(self, digest: str) -> str:
        return f"{self.public}/runs/{digest}"


def _with_group_links(registry: Registry, groups: list[Doc]) -> list[Doc]:
    for group in groups:
        group["permalink"] = registry.group_link(group["id"])
    return groups


def _user_errors(errors: list[Doc]) -> None:
    if errors:
        first = errors[0]
        raise ToolFailure(first["code"], "; ".join(f"{e['field']}: {e['message']}" for e in errors), first.get("field"), errors=errors)


def _axes(axes: dict[str, int], field: str) -> list[Doc]:
    out = []
    for name, value in axes.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolFailure("BAD_USER_INPUT", f"{field}.{name}: must be an integer, not {value!r}", f"{field}.{name}")
        out.append({"name": name, "value": value})
    return out


def _check_first(first: int, most: int = 100) -> int:
    if not 1 <= first <= most:
        raise ToolFailure("BAD_USER_INPUT", f"first: must be between 1 and {most}", "first")
    return first


def _need_type(node: Doc | None, type_name: str, id: str) -> Doc:
    if node is None:
        raise ToolFailure("NOT_FOUND", f"id: no object with ID {id!r}", "id")
    if node.get("__typename") != type_name:
        raise ToolFailure("BAD_ID", f"id: {id!r} is a {node.get('__typename')} ID, not a {type_name} ID", "id")
    node.pop("__typename")
    return node


def build_server(api: ApiClient, public_url: str, *, token_verifier: Any = None, auth: Any = None) -> MCPServer:
    """`token_verifier` and `auth`: the SDK's bearer check (mcp_server/http.py), for HTTP."""
    return build(api, public_url, token_verifier=token_verifier, auth=auth)[0]


def build(
    api: ApiClient, public_url: str, *, token_verifier: Any = None, auth: Any = None
) -> tuple[MCPServer, dict[str, Callable[..., Doc]]]:
    """The MCP server, and its tools as plain functions (the reading CLI calls the same ones, so
    `kernelindex runs --json` and the `list_runs` tool give one document)."""
    registry = Registry(api, public_url)
    functions: dict[str, Callable[..., Doc]] = {}
    server = MCPServer(
        "kernelindex",
        token_verifier=token_verifier,
        auth=auth,
        title="KernelIndex",
        log_level="WARNING",  # the SDK's logging setup would otherwise print every HTTP request on stderr
        instructions=(
            "Read-only tools over the KernelIndex registry of GPU-kernel performance evidence. Start with `search` or "
            "`resolve_kernel` (what is fastest for this exact shape on this GPU); follow IDs with `get_run`, `compare_runs`. "
            "Every answer carries permalinks; a nearest shape is never a measurement of the asked one."
        ),
    )

    def tool(description: str) -> Callable:
        register = server.tool(description=description, annotations=READ_ONLY, structured_output=True)

        def decorate(function: Callable[..., Doc]) -> Callable[..., Doc]:
            functions[function.__name__] = function
            return register(function)

        return decorate

    @tool("Operations (definitions) whose name or title contains every word of `text`, with their comparison groups and #1s.")
    def search(text: str = "", first: Annotated[int, Field(description="at most 50")] = 10, after: str | None = None) -> Doc:
        found = registry.query(queries.SEARCH, {"text": text, "first": _check_first(first, 50), "after": after})["searchDefinitions"]
        for op in found["nodes"]:
            op["permalink"] = registry.operation_link(op["name"])
            _with_group_links(registry, op["comparisonGroups"])
        return {"totalCount": found["totalCount"], "pageInfo": found["pageInfo"], "operations": found["nodes"]}

    def _resolution(answer: Doc) -> Doc:
        _user_errors(answer.pop("userErrors"))
        for cohort in answer["exact"] + [c for n in answer["nearest"] for c in n["cohorts"]]:
            cohort["group"]["permalink"] = registry.group_link(cohort["group"]["id"])
        if answer.get("operation"):
            answer["operation"]["permalink"] = registry.operation_link(answer["operation"]["name"])
        return answer

    @tool(
        'What is fastest for this exact workload shape (every variable axis, e.g. {"batch_size": 4, "seq_len": 128}) on this '
        'GPU (product like "NVIDIA H200" or architecture like "sm_90"): the runs of every matching comparison group ranked on '
        "that case; when nobody measured the shape, the nearest measured shapes on each side of every variable axis (labelled, "
        "not measurements of the asked shape)."
    )
    def resolve_kernel(
        operation: str,
        axes: dict[str, int],
        gpu: str | None = None,
        statistic: str | None = None,
        first: Annotated[int, Field(description="runs per cohort, at most 100")] = 10,
    ) -> Doc:
        variables = {"operation": operation, "axes": _axes(axes, "axes"), "gpu": gpu, "statistic": statistic, "first": _check_first(first)}
        return _resolution(registry.query(queries.RESOLVE, variables)["resolveKernel"])

    @tool("resolve_kernel for up to 20 requests at once ({operation, axes, gpu?, statistic?} each), answered in order.")
    def resolve_kernels(requests: list[dict[str, Any]], first: int = 5) -> Doc:
        if not 1 <= len(requests) <= MAX_BATCH:
            raise ToolFailure("BAD_USER_INPUT", f"requests: {len(requests)} given; between 1 and {MAX_BATCH}", "requests")
        asked = []
        for i, r in enumerate(requests):
            if not isinstance(r, dict) or not isinstance(r.get("operation"), str) or not isinstance(r.get("axes"), dict):
                raise ToolFailure("BAD_USER_INPUT", f"requests[{i}]: needs operation (a string) and axes (an object)", f"requests[{i}]")
            unknown = set(r) - {"operation", "axes", "gpu", "statistic"}
            if unknown:
                raise ToolFailure("BAD_USER_INPUT", f"requests[{i}]: unknown field {sorted(unknown)[0]!r}", f"requests[{i}]")
            asked.append(
                {
                    "operation": r["operation"],
                    "axes": _axes(r["axes"], f"requests[{i}].axes"),
                    "gpu": r.get("gpu"),
                    "statistic": r.get("statistic"),
                }
            )
        answers = registry.query(queries.RESOLVE_MANY, {"requests": asked, "first": _check_first(first)})["resolveKernels"]
        out = []
        for answer in answers:
            try:
                out.append({"ok": True, **_resolution(answer)})
            except ToolFailure as failure:
                out.append({"ok": False, "error": {"message": failure.error.message, **(failure.error.data or {})}})
        return {"results": out}

    @tool("One operation by name: axes, inputs, outputs, workload suites (their case shapes) and comparison groups with their #1s.")
    def get_operation(name: str) -> Doc:
        op = registry.query(queries.OPERATION, {"name": name})["definition"]
        if op is None:
            raise ToolFailure("NOT_FOUND", f"name: no operation named {name!r}", "name")
        op["permalink"] = registry.operation_link(op["name"])
        _with_group_links(registry, op["comparisonGroups"])
        return op

    @tool("One implementation revision by ID: project, revision, pinned code (repository, commit, paths, digest), architectures.")
    def get_implementation(id: str) -> Doc:
        return _need_type(registry.query(queries.NODE_IMPLEMENTATION, {"id": id})["node"], "Implementation", id)

    @tool("One run's evidence by ID: measurements, per-case results, correctness, implementation, protocol, environment, group, citation.")
    def get_run(id: str) -> Doc:
        run = registry.query(queries.RUN, {"id": id})["run"]
        if run is None:
            raise ToolFailure("NOT_FOUND", f"id: no run with ID {id!r}", "id")
        run["permalink"] = run["citation"]["permalink"]
        return run

    @tool("Compare 2 to 8 runs by ID: primary measurement and per-case latencies side by side, and whether they share a comparison group.")
    def compare_runs(ids: list[str]) -> Doc:
        if not 2 <= len(ids) <= 8:
            raise ToolFailure("BAD_USER_INPUT", f"ids: {len(ids)} given; between 2 and 8", "ids")
        nodes = registry.query(queries.COMPARE, {"ids": ids})["nodes"]
        runs = [_need_type(node, "Run", i) for node, i in zip(nodes, ids)]
        same_group = len({r["group"]["id"] if r["group"] else None for r in runs}) == 1
        indexes = sorted({c["index"] for r in runs for c in r["cases"]})
        table = []
        for index in indexes:
            row: Doc = {"index": index, "latencyNs": {}}
            for r in runs:
                case = next((c for c in r["cases"] if c["index"] == index), None)
                if case is None:
                    continue
                row.setdefault("axes", case["axes"])
                statistic = r["primaryMeasurement"]["statistic"]
                value = next((m["valueNs"] for m in case["latency"] if m["statistic"] == statistic), None)
                row["latencyNs"][r["digest"]] = value
            table.append(row)
        for r in runs:
            r.pop("cases")
            r["permalink"] = r.pop("citation")["permalink"]
        return {"sameGroup": same_group, "comparable": same_group, "runs": runs, "cases": table}

    @tool(
        "Runs, newest first, filtered by operation (name), group (ID), gpu (product), source, status (PASSED, FAILED, ...), "
        "evidenceLevel (REPORTED, REPRODUCIBLE, KERNELINDEX_VERIFIED, INDEPENDENTLY_REPLICATED); page with `after`."
    )
    def list_runs(
        operation: str | None = None,
        group: str | None = None,
        gpu: str | None = None,
        source: str | None = None,
        status: str | None = None,
        evidence_level: str | None = None,
        include_superseded: bool = False,
        first: int = 20,
        after: str | None = None,
    ) -> Doc:
        filter_: Doc = {"includeSuperseded": include_superseded}
        if operation:
            found = registry.query(queries.DEFINITION_ID, {"name": operation})["definition"]
            if found is None:
                raise ToolFailure("NOT_FOUND", f"operation: no operation named {operation!r}", "operation")
            filter_["definition"] = found["id"]
        for key, value in (("group", group), ("gpu", gpu), ("source", source), ("status", status), ("evidenceLevel", evidence_level)):
            if value:
                filter_[key] = value.upper() if key in ("status", "evidenceLevel") else value
        page = registry.query(queries.RUNS, {"filter": filter_, "first": _check_first(first), "after": after})["runs"]
        runs = page["nodes"]
        for r in runs:
            r["permalink"] = r.pop("citation")["permalink"]
        return {"pageInfo": page["pageInfo"], "runs": runs}

    @tool(
        "Serving runs (MLPerf Inference results from the KernelIndex catalog), newest first, filtered by model (e.g. "
        "mlperf-llama2-70b), scenario (offline, server, interactive), accelerator (e.g. NVIDIA B200-SXM-180GB), "
        "accelerator_vendor (nvidia, amd), system, round (v5.1, v6.0); each with its manifests' digests, measurements and "
        "provenance. Listed, never ranked; page with `after`."
    )
    def list_serving_runs(
        model: str | None = None,
        scenario: str | None = None,
        accelerator: str | None = None,
        accelerator_vendor: str | None = None,
        system: str | None = None,
        round: str | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> Doc:
        chosen = {"model": model, "scenario": scenario, "accelerator": accelerator, "acceleratorVendor": accelerator_vendor}
        chosen |= {"system": system, "round": round}
        variables = {"filter": {k: v for k, v in chosen.items() if v}, "first": _check_first(first), "after": after}
        page = registry.query(queries.SERVING_RUNS, variables)["servingRuns"]
        return {"totalCount": page["totalCount"], "pageInfo": page["pageInfo"], "servingRuns": page["nodes"]}

    @tool("The current #1 (record) of every comparison group, optionally of one operation (name) or on one GPU (product).")
    def list_records(operation: str | None = None, gpu: str | None = None) -> Doc:
        if operation:
            found = registry.query(queries.OPERATION_RECORDS, {"name": operation})["definition"]
            if found is None:
                raise ToolFailure("NOT_FOUND", f"operation: no operation named {operation!r}", "operation")
            operations = [found]
        else:
            operations = registry.every_definition(queries.RECORDS, queries.RECORDS_PAGE)
        records = []
        for op in operations:
            for g in op["comparisonGroups"]:
                if gpu and gpu.lower().removeprefix("nvidia ") not in (
                    g["gpu"]["product"].lower().removeprefix("nvidia "),
                    g["gpu"]["architecture"],
                ):
                    continue
                leader = g.pop("leader")
                if leader:
                    leader["permalink"] = leader.pop("citation")["permalink"]
                g["permalink"] = registry.group_link(g["id"])
                records.append({"operation": op["name"], "group": g, "record": leader})
        return {"records": records}

    @tool(
        "Changes of #1 (records), newest first: in every group, one operation's (name) or one group's (ID), after `since` "
        "(ISO 8601 time) if given; each with its cause: NEW_RUN, CORRECTION, SUPERSESSION, RETRACTION."
    )
    def list_record_changes(since: str | None = None, operation: str | None = None, group: str | None = None, first: int = 50) -> Doc:
        variables = {"first": _check_first(first), "since": since, "operation": operation, "group": group}
        changes = registry.query(queries.RECORD_CHANGES, variables)["recordChanges"]
        for change in changes:
            change["permalink"] = (
                registry.run_link(change["runDigest"]) if change["runDigest"] else registry.group_link(change["group"]["id"])
            )
            change["group"]["permalink"] = registry.group_link(change["group"]["id"])
        return {"changes": changes, "feed": f"{registry.public}/records/feed.xml"}

    @tool("One comparison group by ID: its rank rule, #1 and its runs best first.")
    def get_group(id: str, first: int = 20) -> Doc:
        group = registry.query(queries.GROUP, {"id": id, "first": _check_first(first)})["comparisonGroup"]
        if group is None:
            raise ToolFailure("NOT_FOUND", f"id: no comparison group with ID {id!r}", "id")
        group["permalink"] = registry.group_link(group["id"])
        for r in group["runs"]["nodes"]:
            r["permalink"] = r.pop("citation")["permalink"]
        return group

    @tool("Every GPU with evidence: product, architecture, how many comparison groups and current runs, for which operations.")
    def list_gpus() -> Doc:
        gpus: dict[tuple[str, str], Doc] = {}
        for op in registry.every_definition(queries.GPUS, queries.GPUS_PAGE):
            for g in op["comparisonGroups"]:
                key = (g["gpu"]["product"], g["gpu"]["architecture"])
                entry = gpus.setdefault(key, {**g["gpu"], "groups": 0, "runs": 0, "operations": []})
                entry["groups"] += 1
                entry["runs"] += g["size"]
                if op["name"] not in entry["operations"]:
                    entry["operations"].append(op["name"])
        return {"gpus": [gpus[k] for k in sorted(gpus)]}

    @tool(
        "Check a KernelIndex v1alpha1 manifest (an object, or JSON/YAML text, at most 1 MiB) and return its kind and digest "
        "(sha256 over RFC 8785 JSON of apiVersion, kind and spec). Nothing is stored."
    )
    def validate_manifest(manifest: dict[str, Any] | str) -> Doc:
        from registry.format import FormatError, format_digest, parse_format_manifest

        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        if len(text.encode("utf-8", "surrogatepass")) > MAX_MANIFEST_BYTES:
            raise ToolFailure("PAYLOAD_TOO_LARGE", f"manifest: larger than {MAX_MANIFEST_BYTES:,} bytes", "manifest")
        data = manifest
        if isinstance(manifest, str):
            try:
                data = yaml.load(manifest, Loader=_ManifestYaml)  # JSON is YAML too
            except yaml.YAMLError as error:
                raise ToolFailure("INVALID_MANIFEST", f"manifest: not JSON or YAML ({str(error).splitlines()[0]})", "manifest") from None
        try:
            parsed = parse_format_manifest(data)
        except FormatError as error:
            problems = [{"field": f"manifest.{path}" if path else "manifest", "reason": reason} for path, reason in error.problems]
            raise ToolFailure(
                "INVALID_MANIFEST", "; ".join(f"{p['field']}: {p['reason']}" for p in problems), problems[0]["field"], problems=problems
            ) from None
        return {"valid": True, "kind": parsed.kind, "name": parsed.metadata.name, "digest": format_digest(parsed)}

    @tool("The JSON Schema of one v1alpha1 kind (OperationSpec, WorkloadSuite, BenchmarkRun, ...).")
    def get_schema(kind: str) -> Doc:
        from registry.format import SCHEMA_FILES, schema_of

        if kind not in SCHEMA_FILES:
            raise ToolFailure("BAD_USER_INPUT", f"kind: {kind!r} is not a kind; one of {', '.join(SCHEMA_FILES)}", "kind")
        return {"kind": kind, "apiVersion": "kernelindex.dev/v1alpha1", "schema": schema_of(kind)}

    @tool(
        "Verify a stored attestation (by ID): that its DSSE envelope's in-toto statement names the run it is attached to, and, "
        "given the signer's ed25519 public key in PEM, that the signature verifies. Also says whether KernelIndex verified it."
    )
    def verify_attestation(id: str, public_key_pem: str | None = None) -> Doc:
        from registry.dsse import SignatureError, keyid, load_public_key, parse_statement, verify_envelope

        att = _need_type(registry.query(queries.ATTESTATION, {"id": id})["node"], "Attestation", id)
        envelope = att["envelope"]
        out: Doc = {
            "attestation": {k: att[k] for k in ("id", "digest", "author", "keyId", "predicateType", "attestedAt")},
            "subjectDigest": att["subjectDigest"],
            "registryVerified": att["verified"],
            "run": {"digest": att["subjectDigest"], "permalink": registry.run_link(att["subjectDigest"])},
        }
        try:
            payload = base64.b64decode(envelope.get("payload", ""), validate=True)
            statement = parse_statement(payload, att["predicateType"])
            out["subjectMatches"] = statement.subject_digest == att["subjectDigest"]
            out["statementSubject"] = statement.subject_digest
        except (SignatureError, ValueError) as error:
            out["subjectMatches"] = False
            out["statementError"] = str(error)
        if public_key_pem is None:
            out["signature"] = {"checked": False, "reason": "no public_key_pem given"}
            return out
        try:
            key = load_public_key(public_key_pem)
        except (SignatureError, ValueError, TypeError) as error:
            raise ToolFailure("BAD_USER_INPUT", f"public_key_pem: not an ed25519 public key in PEM ({error})", "public_key_pem") from None
        try:
            _, signer = verify_envelope(envelope, {keyid(key): key}, envelope.get("payloadType", ""))
            out["signature"] = {"checked": True, "valid": True, "keyId": signer}
        except SignatureError as error:
            out["signature"] = {"checked": True, "valid": False, "code": error.code, "reason": str(error)}
        return out

    @tool("A run's controlled reruns (benchmark jobs of its implementation, with their runs) and its partners' signed reproductions.")
    def list_reruns(id: str) -> Doc:
        run = registry.query(queries.RERUNS, {"id": id})["run"]
        if run is None:
            raise ToolFailure("NOT_FOUND", f"id: no run with ID {id!r}", "id")
        jobs = [
            j for j in run["implementation"]["jobs"]["nodes"] if j["definition"] and j["definition"]["name"] == run["definition"]["name"]
        ]
        for job in jobs:
            if job["run"]:
                job["run"]["permalink"] = job["run"].pop("citation")["permalink"]
        return {
            "run": {"id": run["id"], "digest": run["digest"], "title": run["title"], "permalink": run["citation"]["permalink"]},
            "implementation": {"id": run["implementation"]["id"], "name": run["implementation"]["name"]},
            "controlledReruns": jobs,
            "reproductions": run["attestations"]["nodes"],
        }

    return server, functions
