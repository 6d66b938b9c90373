"""Data on first start: what `serve` loads, idempotently, before it answers requests.

- `data/snapshots/<source>/`: saved responses of each source registered in loaders/sources.py
  (SOL-ExecBench's), imported through the pipeline (loaders/pipeline.py `import_bundled`). The
  synthetic GPU MODE boards are test fixtures now (tests/fixtures/gpumode-synthetic/).
- `data/kernelindex-catalog/`: the KernelIndex public catalog export (its latest.json names the
  file), imported after the snapshots (so our own objects' metadata is the one kept) unless its
  import record is stored already: a restart reads nothing of it.
- `data/controlled/**/manifests.json`: our own harness's manifests (definitions, workloads,
  protocols, environments, implementations, runs).
- `data/code-pins.json`: the commits holding the code of revisions published without one.
- `data/verified/*.json`: signed runner results ({"job", "envelope"}) from controlled reruns,
  verified against the approved runner keys in `data/runners/*.pem` and published as verified.
A second start finds everything present and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from loaders.kernelindex_catalog.fetch import CatalogRefused
from loaders.manifest_files import read_manifests
from loaders.pipeline import import_bundled, run_catalog_import
from registry.code import PinsError, parse_pins
from registry.dsse import keyid, load_public_key
from server.settings import Settings
from store.client import make_client
from store.code_pins import save_pins
from store.manifest_set import publish_set
from store.schema import ensure_schema
from store.verified_results import ResultError, publish_signed_record

# The data that ships with the repository (snapshots, controlled runs, code pins, verified results).
BUNDLED_DATA = Path(__file__).resolve().parents[1] / "data"


class BootstrapError(RuntimeError):
    """Committed data that cannot be loaded: the message names the file and the reason."""


def approved_runner_keys(data_dir: Path) -> dict:
    keys = {}
    for path in sorted((data_dir / "runners").glob("*.pem")):
        key = load_public_key(path.read_bytes())
        keys[keyid(key)] = key
    return keys


async def bootstrap(uri: str, settings: Settings, data_dir: Path) -> None:
    client = make_client(uri)
    try:
        db = client[settings.database]
        await ensure_schema(db)
        await import_bundled(db, data_dir)
        catalog = data_dir / "kernelindex-catalog"
        if (catalog / "latest.json").is_file():
            try:
                await run_catalog_import(db, target=str(catalog), console=None, skip_if_imported=True)
            except CatalogRefused as refused:
                raise BootstrapError(f"{catalog}: " + "; ".join(refused.problems)) from None
        manifests = []
        for path in sorted((data_dir / "controlled").rglob("manifests.json")):
            manifests += read_manifests(path)
        if manifests:
            await publish_set(db, manifests)
        pins_file = data_dir / "code-pins.json"
        if pins_file.is_file():
            try:
                await save_pins(db, parse_pins(json.loads(pins_file.read_text())))
            except (PinsError, json.JSONDecodeError) as error:
                raise BootstrapError(f"{pins_file}: {error}") from None
        approved = approved_runner_keys(data_dir)
        for path in sorted((data_dir / "verified").glob("*.json")):
            record = json.loads(path.read_text())
            try:
                await publish_signed_record(db, record["envelope"], approved)
            except ResultError as error:
                raise BootstrapError(f"{path}: {error.code}: {error}") from None
    finally:
        await client.close()
