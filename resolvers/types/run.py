"""Run: one benchmark run (BenchmarkRun manifest) with everything its dossier shows."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON
from strawberry.types.nodes import SelectedField

from loaders.sources import external_reference, source_title
from registry.controlled_format import aggregates_of, cases_of, is_controlled, run_level_metrics
from resolvers import ids
from resolvers.context import Info
from resolvers.cost_limit import MANIFEST_KIB, PAGE, SMALL_JSON_KIB, weighs
from resolvers.types.attestation import Attestation
from resolvers.types.common import (
    EvidenceLevel,
    Label,
    Long,
    RunStatus,
    check_first,
    decode_cursor,
    encode_cursor,
    format_ns,
    labels_of,
)
from resolvers.types.connection import Connection, connection
from resolvers.types.definition import Definition
from resolvers.types.environment import Environment
from resolvers.types.group import ComparisonGroup
from resolvers.types.implementation import Implementation
from resolvers.types.node import Node
from resolvers.types.note import Note
from resolvers.types.protocol import Protocol, manifest_json
from resolvers.types.workload import Workload
from resolvers.v1alpha1 import harness_version, run_latencies
from store.catalog import import_record
from store.notes import notes_page
from store.queries import attestations_page


@strawberry.type
class Measurement:
    statistic: str
    value_ns: Long
    display: str


def _measurement(statistic: str, value_ns: int) -> Measurement:
    return Measurement(statistic=statistic, value_ns=value_ns, display=format_ns(value_ns))


@strawberry.type
class Metric:
    name: str
    value: float | None
    text: str | None = strawberry.field(description="Set when the source gave a non-numeric value.")


@strawberry.type(description="SOL-ExecBench's own metrics, typed.")
class SolExecBenchMetrics:
    sol_score: float | None
    latency_ms: float | None
    avg_speedup: float | None
    fast1_count: int | None
    fast1_total: int | None

    @strawberry.field(description='e.g. "SOL 0.2851 · 0.46× reference · 2/16 cases faster"')
    def summary(self) -> str:
        parts = []
        if self.sol_score is not None:
            parts.append(f"SOL {self.sol_score:.4f}")
        if self.avg_speedup is not None:
            parts.append(f"{self.avg_speedup:.2f}× reference")
        if self.fast1_count is not None and self.fast1_total is not None:
            parts.append(f"{self.fast1_count}/{self.fast1_total} cases faster")
        return " · ".join(parts)


@strawberry.type
class SourceNative:
    source: str
    source_title: str
    benchmark: str | None
    external_id: str | None = strawberry.field(description="Null when the source gives its records no id (e.g. FlashInfer-Bench traces).")
    external_reference: str | None = strawberry.field(description='How the source names the record, e.g. "submission/37369".')
    sol_execbench: SolExecBenchMetrics | None = strawberry.field(name="solExecBench")
    raw: JSON = strawberry.field(description="The source-native block exactly as stored.", directives=weighs(SMALL_JSON_KIB))

    @strawberry.field(
        description="The source's own metrics, by name. A controlled run of ours carries every case's "
        "results here (`case<i>_*`: statistics and every timing sample, the dossier's case table); "
        "`perCase: false` leaves those out, keeping the run-level figures."
    )
    def metrics(self, per_case: bool = True) -> list[Metric]:
        metrics = self.raw.get("metrics") or {}
        if not per_case:
            metrics = run_level_metrics(self.source, metrics)
        return [
            Metric(name=k, value=_number(v), text=None if _number(v) is not None or v is None else str(v))
            for k, v in sorted(metrics.items())
        ]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _source_native(block: dict[str, Any] | None) -> SourceNative | None:
    if not block:
        return None
    metrics = block.get("metrics", {})
    sol = None
    if block["source"] == "sol-execbench":
        count, total = metrics.get("fast_1_count"), metrics.get("fast_1_total")
        sol = SolExecBenchMetrics(
            sol_score=_number(metrics.get("sol_score")),
            latency_ms=_number(metrics.get("latency_ms")),
            avg_speedup=_number(metrics.get("avg_speedup")),
            fast1_count=count if isinstance(count, int) else None,
            fast1_total=total if isinstance(total, int) else None,
        )
    return SourceNative(
        source=block["source"],
        source_title=source_title(block["source"]),
        benchmark=block.get("benchmark"),
        external_id=block.get("externalId"),
        external_reference=external_reference(block["source"], block["externalId"]) if block.get("externalId") else None,
        sol_execbench=sol,
        raw=block,
    )


@strawberry.type
class RunIdentity:
    digest: str
    comparison_key: str
    source: str
    source_title: str
    external_id: str | None
    external_reference: str | None
    protocol_digest: str
    workload_digest: str
    environment_digest: str
    implementation_digest: str


@strawberry.type
class Correctness:
    status: RunStatus
    statement: str = strawberry.field(description="What we know about this run's correctness, in one sentence.")
    policy: str = strawberry.field(description='The policy applied, or "not published".')
    rounds: int | None


@strawberry.type
class Artifact:
    name: str
    media_type: str | None
    uri: str | None
    digest: str | None


@strawberry.type
class OutputCheck:
    output: str
    matched_ratio: float
    max_abs_error: float | None
    passed: bool


@strawberry.type
class CaseResult:
    index: int
    axes: list[Label]
    status: RunStatus
    latency: list[Measurement] = strawberry.field(
        description="The case's statistics (e.g. mean, std, err, best, worst for GPU MODE; median, p25, ... for ours)."
    )
    samples_ns: list[Long] = strawberry.field(directives=weighs(SMALL_JSON_KIB))
    sample_count: int | None = strawberry.field(
        description="Timed runs behind the statistics: the raw samples' count, or the source's count when it publishes statistics only."
    )
    reference_latency_ns: Long | None
    eager_latency_ns: Long | None
    sol_ns: Long | None
    sol_score: float | None
    correctness_rounds: int | None
    correctness: list[OutputCheck]


@strawberry.type(description="Where a record imported from a catalog export comes from, and on what terms.")
class Provenance:
    export_file: str = strawberry.field(description="The export the record was read from, e.g. catalog-2026-08-16-0022af0b.jsonl.zst.")
    export_sha256: str
    export_license: str | None
    source: str | None = strawberry.field(description="The original source's key, e.g. gpumode-kernelbot.")
    source_name: str | None
    license: str | None = strawberry.field(description="The original source's licence or terms.")
    attribution: str | None = strawberry.field(description="The attribution the source asks for.")
    url: str | None
    text: str = strawberry.field(description="All of it in one sentence, as the dossier shows it.")


async def provenance_of(info: Info, doc: dict[str, Any]) -> list[Provenance]:
    out = []
    for record in doc.get("provenance") or ():
        export = record["export"]
        stored = await import_record(info.context.db, export["sha256"]) or {}
        sources = {s["slug"]: s for s in stored.get("sources", [])}
        for slug in record.get("sources") or [None]:
            source = sources.get(slug, {})
            parts = [f"From {export['file']} (sha256 {export['sha256'][:16]}…)"]
            if source:
                parts.append(f"original source {source.get('name', slug)}")
                if source.get("license"):
                    parts.append(f"licence: {source['license']}")
                if source.get("attribution"):
                    parts.append(f"attribution: {source['attribution']}")
            out.append(
                Provenance(
                    export_file=export["file"],
                    export_sha256=export["sha256"],
                    export_license=(stored.get("export") or {}).get("license"),
                    source=slug,
                    source_name=source.get("name"),
                    license=source.get("license"),
                    attribution=source.get("attribution"),
                    url=source.get("url"),
                    text=" · ".join(parts) + ".",
                )
            )
    return out


@strawberry.type
class Citation:
    permalink: str
    digest: str
    accessed_at: datetime
    text: str


def _case(c: dict[str, Any]) -> CaseResult:
    check = c.get("correctness") or {}
    return CaseResult(
        index=c["index"],
        axes=[Label(key=k, value=str(v)) for k, v in c["axes"].items()],
        status=RunStatus(c["status"]),
        latency=[_measurement(k, v) for k, v in c.get("latencyNs", {}).items()],
        samples_ns=c.get("samplesNs", []),
        sample_count=c.get("sampleCount") or (len(c["samplesNs"]) if c.get("samplesNs") else None),
        reference_latency_ns=c.get("referenceLatencyNs"),
        eager_latency_ns=c.get("eagerLatencyNs"),
        sol_ns=c.get("solNs"),
        sol_score=c.get("solScore"),
        correctness_rounds=check.get("rounds"),
        correctness=[
            OutputCheck(output=name, matched_ratio=o["matchedRatio"], max_abs_error=o.get("maxAbsError"), passed=o["passed"])
            for name, o in check.get("outputs", {}).items()
        ],
    )


@strawberry.federation.type(keys=["id"], description="One benchmark run and the evidence around it.")
class Run(Node):
    id: strawberry.ID
    digest: str
    name: str
    title: str | None
    labels: list[Label]
    status: RunStatus
    current: bool = strawberry.field(description="False once a newer run of the same record supersedes it.")
    observed_at: datetime
    published_at: datetime
    rank: int | None = strawberry.field(description="Rank in its comparison group; null when not ranked.")
    evidence_level: EvidenceLevel
    source_native: SourceNative | None
    doc: strawberry.Private[dict[str, Any]]
    # Objects a list page loaded for all its runs at once (see run_connection).
    preloaded: strawberry.Private[dict[str, Any]] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Run:
        spec, metadata = doc["spec"], doc["metadata"]
        return cls(
            id=strawberry.ID(ids.encode("Run", doc["_id"])),
            digest=doc["_id"],
            name=metadata["name"],
            title=metadata.get("title"),
            labels=labels_of(metadata.get("labels")),
            status=RunStatus(doc["status"]),
            current=doc["current"],
            observed_at=datetime.fromisoformat(spec["observedAt"].replace("Z", "+00:00")),
            published_at=doc["storedAt"],
            rank=doc.get("rank"),
            evidence_level=EvidenceLevel.of(doc["evidenceLevel"]),
            source_native=_source_native(spec.get("sourceNative")),
            doc=doc,
        )

    @strawberry.field(description="Files of the run: the older dialect's artifacts, or the format's evidence (rawSamples, logs).")
    def artifacts(self) -> list[Artifact]:
        spec = self.doc["spec"]
        return [
            Artifact(name=a["name"], media_type=a.get("mediaType"), uri=a.get("uri"), digest=a.get("digest"))
            for a in spec.get("artifacts", [])
        ] + [
            Artifact(name=name, media_type="application/json" if name == "rawSamples" else "text/plain", uri=e["uri"], digest=e["digest"])
            for name, e in (spec.get("evidence") or {}).items()
            if name in ("rawSamples", "logs")
        ]

    @strawberry.field(description="The canonical manifest.", directives=weighs(MANIFEST_KIB))
    def manifest(self) -> JSON:
        return manifest_json(self.doc)

    @strawberry.field(description="The statistic the protocol ranks by, and its value.")
    def primary_measurement(self) -> Measurement:
        primary, values = run_latencies(self.doc)
        return _measurement(primary, values.get(primary, 0))

    @strawberry.field(description="Every latency statistic the run reports.")
    def measurements(self) -> list[Measurement]:
        return [_measurement(k, v) for k, v in run_latencies(self.doc)[1].items()]

    @strawberry.field(description="Suite-level aggregates (controlled runs).", directives=weighs(SMALL_JSON_KIB))
    def aggregates(self) -> JSON:
        spec = self.doc["spec"]
        return aggregates_of(spec) if is_controlled(spec) else spec.get("aggregates", {})

    @strawberry.field(
        description="Per-case results: statistics, checks and raw samples of controlled runs (in the v1alpha1 format, "
        "read from sourceNative.metrics), or per-case statistics (GPU MODE); empty when unpublished."
    )
    async def cases(self, info: Info) -> list[CaseResult]:
        spec = self.doc["spec"]
        if is_controlled(spec):
            workload = await info.context.loaders.workloads.load(spec["workloadDigest"])
            return [_case(c) for c in cases_of(spec, workload["spec"] if workload else None)]
        return [_case(c) for c in spec.get("cases", [])]

    @strawberry.field
    def identity(self) -> RunIdentity:
        spec = self.doc["spec"]
        native = spec.get("sourceNative") or {}
        source = self.doc["source"]
        external = native.get("externalId")
        return RunIdentity(
            digest=self.digest,
            comparison_key=self.doc["groupKey"],
            source=source,
            source_title=source_title(source),
            external_id=external,
            external_reference=external_reference(source, external) if external else None,
            protocol_digest=spec["protocolDigest"],
            workload_digest=spec["workloadDigest"],
            environment_digest=spec["environmentDigest"],
            implementation_digest=spec["implementationDigest"],
        )

    @strawberry.field
    def group(self, info: Info) -> ComparisonGroup | None:  # or an awaitable of it (graphql-core awaits)
        if "group" in self.preloaded:
            return self.preloaded["group"]
        return _load_as(info.context.loaders.groups, self.doc["groupKey"], ComparisonGroup.from_doc)

    @strawberry.field
    def protocol(self, info: Info) -> Protocol:  # or an awaitable of it
        if "protocol" in self.preloaded:
            return self.preloaded["protocol"]
        return _load_as(info.context.loaders.protocols, self.doc["spec"]["protocolDigest"], Protocol.from_doc)

    @strawberry.field
    def environment(self, info: Info) -> Environment:  # or an awaitable of it
        if "environment" in self.preloaded:
            return self.preloaded["environment"]
        return _load_as(info.context.loaders.environments, self.doc["spec"]["environmentDigest"], Environment.from_doc)

    @strawberry.field
    async def workload(self, info: Info) -> Workload:
        return Workload.from_doc(await info.context.loaders.workloads.load(self.doc["spec"]["workloadDigest"]))

    @strawberry.field
    async def implementation(self, info: Info) -> Implementation:
        doc = await info.context.loaders.implementations.load(self.doc["spec"]["implementationDigest"])
        return Implementation.from_doc(doc)

    @strawberry.field
    async def definition(self, info: Info) -> Definition:
        return Definition.from_doc(await info.context.loaders.definitions.load(self.doc["definitionDigest"]))

    @strawberry.field
    async def correctness(self, info: Info) -> Correctness:
        protocol = await info.context.loaders.protocols.load(self.doc["spec"]["protocolDigest"])
        checks = protocol["spec"]["correctness"]
        policy = checks.get("policy")
        source = self.doc["source"]
        status = self.doc["status"]
        if source == "kernelindex":
            statement = f"{status.capitalize()} under {protocol['spec']['harness']['name']} {harness_version(protocol['spec'])}"
            if checks.get("rounds"):
                statement += f": {checks['rounds']} rounds of fresh inputs against the definition's reference"
            statement += "."
        else:
            statement = f"Marked {status} by the source; " + (
                f"the correctness policy: {policy}." if policy else "the correctness policy was not published."
            )
        return Correctness(status=RunStatus(status), statement=statement, policy=policy or "not published", rounds=checks.get("rounds"))

    @strawberry.field(description="The run this one corrects, if any.")
    async def supersedes(self, info: Info) -> Run | None:
        digest = self.doc.get("supersedes")
        doc = await info.context.loaders.runs.load(digest) if digest else None
        return Run.from_doc(doc) if doc else None

    @strawberry.field(description="The run that corrects this one, if any.")
    async def superseded_by(self, info: Info) -> Run | None:
        digest = self.doc.get("supersededBy")
        doc = await info.context.loaders.runs.load(digest) if digest else None
        return Run.from_doc(doc) if doc else None

    @strawberry.field(description="Signed reproductions by partners. They never change the evidence level.", directives=[PAGE])
    async def attestations(self, info: Info, first: int = 20, after: str | None = None) -> Connection[Attestation]:
        after_seq = decode_cursor(after, "attestations", 1)[0] if after else None
        docs, more = await attestations_page(info.context.db, subject=self.digest, first=check_first(first), after_seq=after_seq)
        return connection(docs, more, Attestation.from_doc, lambda d: encode_cursor("attestations", d["seq"]))

    @strawberry.field(description="Unsigned notes by partners and maintainers, oldest first; apart from reproductions.", directives=[PAGE])
    async def notes(self, info: Info, first: int = 20, after: str | None = None) -> Connection[Note]:
        after_seq = decode_cursor(after, "notes", 1)[0] if after else None
        docs, more = await notes_page(info.context.db, run_digest=self.digest, first=check_first(first), after_seq=after_seq)
        return connection(docs, more, Note.from_doc, lambda d: encode_cursor("notes", d.seq))

    @strawberry.field(description="Where the record comes from when it was imported from a catalog export (empty otherwise).")
    async def provenance(self, info: Info) -> list[Provenance]:
        return await provenance_of(info, self.doc)

    @strawberry.field(description="How to cite this record: permalink, digest and access date.")
    def citation(self, info: Info) -> Citation:
        permalink = f"{info.context.public_url}/runs/{self.digest}"
        accessed = info.context.now
        text = f"{self.title or self.name}. KernelIndex, {permalink} ({self.digest}), accessed {accessed.date().isoformat()}."
        return Citation(permalink=permalink, digest=self.digest, accessed_at=accessed, text=text)

    @classmethod
    def key_only(cls, key: str) -> Run:
        """A Run known by its key alone, as the benchmarks subgraph returns a job's run (it shows
        only `id`; the registry resolves the rest by reference): see Definition.key_only."""
        return cls(
            id=strawberry.ID(ids.encode("Run", key)),
            digest=key,
            name="",
            title=None,
            labels=[],
            status=RunStatus.passed,
            current=True,
            observed_at=datetime.min,
            published_at=datetime.min,
            rank=None,
            evidence_level=EvidenceLevel.REPORTED,
            source_native=None,
            doc={"_id": key},
        )

    @classmethod
    async def resolve_reference(cls, info: Info, id: strawberry.ID) -> Run | None:
        # Another subgraph's reference (e.g. a job's run): read as the run's leaderboard row when
        # the row answers the query (ours carry every timing sample: 38-92 kB against ~2 kB).
        key = ids.decode_as(id, "Run")
        doc = await info.context.loaders.run_rows.load(key) if rows_answer(info) else None
        doc = doc or await info.context.loaders.runs.load(key)
        return cls.from_doc(doc) if doc else None


# Run fields that a run read as a leaderboard row (store/leaderboards.py ROW_FIELDS) answers: a
# query for any other field reads whole run documents.
ROW_ANSWERS = frozenset(
    {
        "__typename",
        "id",
        "digest",
        "name",
        "title",
        "status",
        "current",
        "observedAt",
        "publishedAt",
        "rank",
        "evidenceLevel",
        "sourceNative",
        "primaryMeasurement",
        "measurements",
        "implementation",
        "citation",
    }
)
# ... and that a run read with a list page's projection (store/queries.py LISTED_FIELDS) answers.
LISTED_ANSWERS = ROW_ANSWERS | {"protocol", "environment", "workload", "definition", "group", "identity", "correctness"}


def _fields(selections: list) -> set[str]:
    """The names of the fields selected at this level (fragments flattened)."""
    names: set[str] = set()
    for selection in selections:
        if isinstance(selection, SelectedField):
            names.add(selection.name)
        else:
            names |= _fields(selection.selections)
    return names


def _children(selections: list, name: str) -> list:
    """The selections under the fields called `name` at this level (fragments flattened)."""
    out = []
    for selection in selections:
        if isinstance(selection, SelectedField):
            if selection.name == name:
                out += selection.selections
        else:
            out += _children(selection.selections, name)
    return out


def selected_run_fields(info: Info) -> set[str]:
    """The fields asked of the run(s) the current field returns: of a connection's nodes (edges {
    node } and nodes), else of the field itself."""
    return _fields(_run_selections(info))


def _asks_per_case(selections: list) -> bool:
    """Whether a run selection reads the per-case part of `sourceNative` (`metrics` without
    `perCase: false`, or `raw`), which leaderboard rows leave out."""
    stack = _children(selections, "sourceNative")
    while stack:
        selection = stack.pop()
        if not isinstance(selection, SelectedField):  # a fragment inside sourceNative { … }
            stack += selection.selections
        elif selection.name == "raw" or (selection.name == "metrics" and selection.arguments.get("perCase", True) is not False):
            return True
    return False


def _run_selections(info: Info) -> list:
    here = [selection for field in info.selected_fields for selection in field.selections]
    if {"edges", "nodes", "pageInfo"} & _fields(here):
        return _children(_children(here, "edges"), "node") + _children(here, "nodes")
    return here


def rows_answer(info: Info) -> bool:
    """Whether leaderboard rows (store/leaderboards.py ROW_FIELDS, per-case metrics left out)
    answer what the query asks of the run(s) the current field returns."""
    selections = _run_selections(info)
    return _fields(selections) <= ROW_ANSWERS and not _asks_per_case(selections)


def asks_per_case(info: Info) -> bool:
    """Whether the query reads the per-case part of the returned runs' `sourceNative`, which
    rows (leaderboard rows, store/run_rows.py) leave out."""
    return _asks_per_case(_run_selections(info))


async def run_connection(
    docs: list[dict[str, Any]], has_next: bool, cursor_of: Callable[[dict[str, Any]], str], info: Info, *, whole: bool = True
) -> Connection[Run]:
    """A page of runs; the nested objects the query selects are loaded for the whole page.
    `whole`: the documents are whole runs, not projections (only whole ones prime the loader)."""
    if whole:
        loader = info.context.loaders.runs
        for doc in docs:
            loader.prime(doc["_id"], doc)  # a later lookup of the same run (e.g. a leader) is free
    page = connection(docs, has_next, Run.from_doc, cursor_of)
    await _preload([edge.node for edge in page.edges], requested_fields(info), info)
    return page


async def _load_as(loader, key: str, convert: Callable[[dict[str, Any]], Any]) -> Any:
    doc = await loader.load(key)
    return convert(doc) if doc else None


# field → (loader, key of a run document, type) for the lookups a list page batches itself.
_PRELOADS = {
    "protocol": ("protocols", lambda d: d["spec"]["protocolDigest"], Protocol.from_doc),
    "environment": ("environments", lambda d: d["spec"]["environmentDigest"], Environment.from_doc),
    "group": ("groups", lambda d: d["groupKey"], ComparisonGroup.from_doc),
}


async def _preload(runs: list[Run], wanted: set[str], info: Info) -> None:
    """One load_many per nested object a page asks for, instead of one awaited lookup per run
    (the same database round trips; much less per-item async work in the executor); the
    load_manys at once, as their lookups do not depend on each other."""
    if not runs:
        return

    async def preload(field_name: str, loader_name: str, key_of: Callable[[dict[str, Any]], str], convert: Callable) -> None:
        keys = [key_of(run.doc) for run in runs]
        distinct = list(dict.fromkeys(keys))
        docs = await getattr(info.context.loaders, loader_name).load_many(distinct)
        objects = {key: convert(doc) for key, doc in zip(distinct, docs) if doc}
        for run, key in zip(runs, keys):
            run.preloaded[field_name] = objects.get(key)

    await asyncio.gather(*(preload(name, *spec) for name, spec in _PRELOADS.items() if name in wanted))


def requested_fields(info: Info) -> set[str]:
    """Every field name selected below the current field (fragments included)."""
    names: set[str] = set()
    stack = [selection for field in info.selected_fields for selection in field.selections]
    while stack:
        selection = stack.pop()
        if isinstance(selection, SelectedField):
            names.add(selection.name)
        stack.extend(selection.selections)
    return names
