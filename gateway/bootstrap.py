"""Data on first start: what `serve` loads, idempotently, before it answers requests.

- `data/snapshots/sol-execbench/`: saved SOL-ExecBench responses, imported by the loader.
- `data/controlled/**.json`: our own controlled runs (manifests from the harness and runners).
A second start finds everything present and writes nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path

from gateway.manifest_files import read_manifests
from gateway.settings import Settings
from store.client import make_client
from store.manifest_set import publish_set
from store.schema import ensure_schema

log = logging.getLogger("kernelindex.bootstrap")


async def bootstrap(uri: str, settings: Settings, data_dir: Path) -> None:
    client = make_client(uri)
    try:
        db = client[settings.database]
        await ensure_schema(db)
        snapshot = data_dir / "snapshots" / "sol-execbench"
        if snapshot.is_dir():
            from loaders.sol_execbench.cli import run_import

            await run_import(db, snapshot_dir=snapshot, base_url=None, kernels=None, limit=None, dry_run=False, console=None)
        manifests = []
        for path in sorted((data_dir / "controlled").rglob("*.json")):
            if path.name.endswith(".raw.json") or "raw" in path.parts:
                continue  # raw measurements kept beside the manifests
            manifests += read_manifests(path)
        if manifests:
            await publish_set(db, manifests)
    finally:
        await client.close()
