"""The dummy source's steps (synthetic data, tests only). A snapshot directory holds
`shelves.json` ({"shelves": ["a", ...]}) and `shelves/{name}.json` ({"items": [{"id", "user",
"latency_ns"}, ...]}); every item is one run of the shelf's operation. Made-up names throughout.
Imports only loaders.common, registry and tests.factories: nothing outside this folder changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from loaders.common.http import FetchError
from loaders.common.report import print_problems, summary_table
from loaders.common.snapshot import SnapshotDir
from loaders.common.source import Discovery, Fetched, Option, Record, RecordGroup, Rejected, RunManifests, SourceLoader, UnitReader
from loaders.common.source_records import record_fingerprint
from registry.digest import manifest_digest
from registry.manifests import make_manifest
from tests import factories
from tests.loaders.dummy_source import SOURCE

CODE = b"dummy-source v1"


class _Snapshot(SnapshotDir):
    def __init__(self, root: Path):
        super().__init__(root, "https://dummy.invalid/api")

    async def get(self, path: str):
        return self.read(self.root / (path.strip("/") + ".json"), self.base_url + path)


class _ShelfReader(UnitReader):
    def __init__(self, shelf: str, limit: int | None):
        self.shelf, self.limit = shelf, limit
        self.definition = factories.definition(f"dummy-{shelf}")
        self.records: list[Record] = []

    async def fetch(self, source: Any):
        try:
            yield Fetched(f"shelf {self.shelf}", await source.get(f"/shelves/{self.shelf}"))
        except FetchError as error:
            yield Fetched(f"shelf {self.shelf}", error.response, error.reason)

    def parse(self, fetched: Fetched) -> None:
        items = json.loads(fetched.response.body)["items"]
        for item in items[: self.limit]:
            fingerprint = record_fingerprint(CODE, self.shelf, item)
            self.records.append(Record(str(item["id"]), fingerprint, f"item {item['id']}", (self.definition, item)))

    def groups(self) -> list[RecordGroup]:
        return [RecordGroup(manifest_digest(self.definition), self.records)]


class DummyLoader(SourceLoader):
    key = SOURCE
    title = "Dummy"
    description = "a synthetic source for tests (a snapshot directory only)"
    unit = "shelves"
    record_prefix = "item"
    options = (Option("--shelf", "shelves", "shelf name (repeatable)"),)
    selects = "shelves"
    limit_help = "items per shelf"

    def open(self, snapshot_dir: Path | None, base_url: str | None):
        if snapshot_dir is None:
            raise FetchError(base_url or "dummy", "the dummy source reads snapshot directories only")
        return _Snapshot(snapshot_dir)

    def print_report(self, report, console: Console) -> None:
        console.print(f"[bold]Dummy {'DRY RUN' if report.dry_run else 'import'}[/bold] from {report.source}")
        console.print(summary_table(report, [], records="items"))
        print_problems(report, console)

    async def discover(self, source: Any, report, *, shelves: list[str] | None = None) -> Discovery:
        response = await source.get("/shelves")
        listed = json.loads(response.body)["shelves"]
        return Discovery(responses=[response], units=[s for s in listed if not shelves or s in shelves])

    def unit_label(self, unit: str) -> str:
        return f"shelf {unit}"

    def reader(self, unit: str, found: Discovery, report, limit: int | None) -> UnitReader:
        return _ShelfReader(unit, limit)

    def normalize(self, record: Record) -> RunManifests:
        definition, item = record.data
        if item["latency_ns"] <= 0:
            raise Rejected(f"latency_ns: must be positive, got {item['latency_ns']}")
        workload = factories.workload(definition)
        protocol = factories.protocol(family="dummy_synthetic", version="v1")
        environment = factories.environment()
        implementation = factories.implementation(definition, item["user"], f"item-{item['id']}")
        run = make_manifest(
            "BenchmarkRun",
            f"dummy-{item['id']}",
            {
                "status": "passed",
                "timing": {"primaryStatistic": "mean", "latencyNs": {"mean": item["latency_ns"]}},
                "observedAt": "2026-08-16T10:44:34.394Z",
                "protocolDigest": manifest_digest(protocol),
                "workloadDigest": manifest_digest(workload),
                "environmentDigest": manifest_digest(environment),
                "implementationDigest": manifest_digest(implementation),
                "sourceNative": {"source": SOURCE, "benchmark": definition.spec.name, "externalId": record.external_id, "metrics": {}},
            },
            title=f"{item['user']} · {definition.spec.name}",
        )
        return RunManifests(run, definition, workload, protocol, environment, implementation, record.fingerprint)


LOADER = DummyLoader()
