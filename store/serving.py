"""Serving evidence (the KernelIndex catalog's MLPerf serving runs): listed and filtered, never
ranked.

Filters are the fields a reader of MLPerf results narrows by, all of them format fields
(registry/schemas/serving-*.v1alpha1.schema.json): the model (ModelRevision `metadata.name`, e.g.
"mlperf-llama2-70b"), the scenario (ServingRun `spec.sourceNative.scenario`: offline, server,
interactive), the accelerator (`spec.topology.acceleratorModel`, e.g. "NVIDIA B200-SXM-180GB", or
its vendor `spec.topology.acceleratorVendor`), the system (ServingConfiguration
`spec.options.system`, e.g. "Supermicro AS-8125GS-TNMR2") and the round (`spec.harness.version`,
e.g. "v5.1").

Order: newest observation first (`spec.observedAt`), then by digest; a page starts after a
(observedAt, digest) position: keyset paging over the listing below.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from pymongo.asynchronous.database import AsyncDatabase

from store.read_models import ServingRunDocument

RUNS = "serving_runs"
MODELS = "model_revisions"
CONFIGURATIONS = "serving_configurations"


@dataclass(frozen=True)
class ServingFilter:
    model: str | None = None  # ModelRevision metadata.name
    scenario: str | None = None
    accelerator: str | None = None
    accelerator_vendor: str | None = None
    system: str | None = None
    round: str | None = None


@dataclass(frozen=True)
class ListedServingRun:
    """What filtering, ordering and counting need of one run (all of it immutable: a serving run
    is a content-addressed manifest)."""

    digest: str
    observed_at: str
    model: str  # the model revision's metadata.name
    scenario: str | None
    accelerator: str
    accelerator_vendor: str | None
    system: str | None
    round: str

    @property
    def position(self) -> tuple[str, str]:
        return (self.observed_at, self.digest)

    def matches(self, f: ServingFilter) -> bool:
        return all(
            wanted is None or wanted == have
            for wanted, have in (
                (f.model, self.model),
                (f.scenario, self.scenario),
                (f.accelerator, self.accelerator),
                (f.accelerator_vendor, self.accelerator_vendor),
                (f.system, self.system),
                (f.round, self.round),
            )
        )


@dataclass(frozen=True)
class _Listing:
    counts: tuple[int, int, int]  # runs, models, configurations: the listing is whole while these hold
    runs: list[ListedServingRun]  # newest first, then by digest
    model_titles: dict[str, str] = field(default_factory=dict)  # metadata.name -> title


# Per database, kept while the counts are unchanged. Serving objects are only ever added (the
# catalog writer inserts them, immutable, never deleted), so a count says whether the listing is
# whole; SecantusDB reads every document of a non-range query anyway (store/queries.py says more).
_LISTINGS: OrderedDict[tuple[int, str], _Listing] = OrderedDict()
_LISTINGS_KEPT = 16


async def _counts(db: AsyncDatabase) -> tuple[int, int, int]:
    return (
        await db[RUNS].estimated_document_count(),
        await db[MODELS].estimated_document_count(),
        await db[CONFIGURATIONS].estimated_document_count(),
    )


async def _listing(db: AsyncDatabase) -> _Listing:
    key = (id(db.client), db.name)
    counts = await _counts(db)
    listing = _LISTINGS.get(key)
    if listing is None or listing.counts != counts:
        models = {d["_id"]: d["metadata"] async for d in db[MODELS].find({}, {"metadata.name": 1, "metadata.title": 1})}
        systems = {
            d["_id"]: (d["spec"].get("options") or {}).get("system") async for d in db[CONFIGURATIONS].find({}, {"spec.options.system": 1})
        }
        fields = {"spec.observedAt": 1, "spec.modelDigest": 1, "spec.configurationDigest": 1, "spec.topology": 1}
        fields |= {"spec.sourceNative.scenario": 1, "spec.harness.version": 1}
        runs = []
        async for doc in db[RUNS].find({}, fields):
            spec = doc["spec"]
            model = models.get(spec["modelDigest"], {})
            runs.append(
                ListedServingRun(
                    digest=doc["_id"],
                    observed_at=spec["observedAt"],
                    model=model.get("name", spec["modelDigest"]),
                    scenario=(spec.get("sourceNative") or {}).get("scenario"),
                    accelerator=spec["topology"]["acceleratorModel"],
                    accelerator_vendor=spec["topology"].get("acceleratorVendor"),
                    system=systems.get(spec["configurationDigest"]),
                    round=spec["harness"]["version"],
                )
            )
        runs.sort(key=lambda r: r.digest)
        runs.sort(key=lambda r: r.observed_at, reverse=True)
        titles = {m["name"]: m.get("title") or m["name"] for m in models.values()}
        listing = _Listing(counts=counts, runs=runs, model_titles=titles)
    _LISTINGS[key] = listing
    _LISTINGS.move_to_end(key)
    while len(_LISTINGS) > _LISTINGS_KEPT:
        _LISTINGS.popitem(last=False)
    return listing


def _after(run: ListedServingRun, position: tuple[str, str]) -> bool:
    """Whether `run` comes after `position` in the listing's order (observedAt down, digest up)."""
    observed_at, digest = position
    return run.observed_at < observed_at or (run.observed_at == observed_at and run.digest > digest)


@dataclass(frozen=True)
class ServingPage:
    runs: list[ServingRunDocument]
    has_next: bool
    total: int  # runs matching the filter


async def serving_runs_page(db: AsyncDatabase, *, where: ServingFilter, first: int, after: tuple[str, str] | None) -> ServingPage:
    """Runs matching `where`, newest observation first, after the position `after`; the objects
    they name are read by the API's per-request DataLoaders (one find per collection a page)."""
    listing = await _listing(db)
    matching = [r for r in listing.runs if r.matches(where)]
    start = 0 if after is None else next((i for i, r in enumerate(matching) if _after(r, after)), len(matching))
    wanted = matching[start : start + first]
    found = {}
    if wanted:
        found = {d["_id"]: d async for d in db[RUNS].find({"_id": {"$in": [r.digest for r in wanted]}})}
    runs = [ServingRunDocument.model_validate(found[r.digest]) for r in wanted if r.digest in found]
    return ServingPage(runs=runs, has_next=start + first < len(matching), total=len(matching))


@dataclass(frozen=True)
class FacetValue:
    value: str
    title: str
    count: int


@dataclass(frozen=True)
class ServingFacets:
    """Every value each filter can take among the stored runs, with how many runs have it."""

    total: int
    models: list[FacetValue]
    scenarios: list[FacetValue]
    accelerators: list[FacetValue]
    accelerator_vendors: list[FacetValue]
    systems: list[FacetValue]
    rounds: list[FacetValue]


def _facet(values: list[str | None], titles: dict[str, str] | None = None) -> list[FacetValue]:
    counted = Counter(v for v in values if v is not None)
    return [FacetValue(value=v, title=(titles or {}).get(v, v), count=n) for v, n in sorted(counted.items())]


async def serving_facets(db: AsyncDatabase) -> ServingFacets:
    listing = await _listing(db)
    runs = listing.runs
    return ServingFacets(
        total=len(runs),
        models=_facet([r.model for r in runs], listing.model_titles),
        scenarios=_facet([r.scenario for r in runs]),
        accelerators=_facet([r.accelerator for r in runs]),
        accelerator_vendors=_facet([r.accelerator_vendor for r in runs]),
        systems=_facet([r.system for r in runs]),
        rounds=_facet([r.round for r in runs]),
    )
