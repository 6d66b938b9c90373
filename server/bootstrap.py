"""Data on first start: what `serve` loads, idempotently, before it answers requests.

- every source registered in loaders/sources.py with data here, in registration order, through
  the pipeline (loaders/pipeline.py `bundled_sources`, `run_import`): `data/snapshots/<source>/`,
  saved responses (SOL-ExecBench's; the synthetic GPU MODE boards are test fixtures now,
  tests/fixtures/gpumode-synthetic/), then `data/kernelindex-catalog/`, the KernelIndex public
  catalog export (its latest.json names the file), skipped when its import record is stored.
- `data/controlled/**/manifests.json`: our own harness's manifests in the v1alpha1 format
  (operations, workloads, protocols, environments, implementations, runs), through the format's
  write path; runs of the older dialect stored under the same names are superseded.
- `data/code-pins.json`: the commits holding the code of revisions published without one.
- `data/verified/*.json`: signed runner results ({"job", "envelope"}) from controlled reruns,
  verified against the approved runner keys in `data/runners/*.pem` and published as verified.
  Those of the older dialect are kept as files only: their runs are re-expressed in
  data/controlled/h200-verified-reruns/ (Reproducible), as their signatures cover older digests.
A second start finds everything present and writes nothing; a start whose data files and importing
code are those of the last full load (store/bundled_loads.py) does not even read them.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from loaders.common.format_set import FormatSet, format_set
from loaders.common.source import WholeSourceLoader
from loaders.pipeline import bundled_sources, publish_format_set, publish_verified, run_import
from registry.code import PinsError, parse_pins
from registry.controlled_format import SOURCE as OUR_SOURCE
from registry.dsse import keyid, load_public_key
from registry.format import FormatError
from server.settings import Settings
from store import bundled_loads, leaderboards
from store.client import make_client
from store.code_pins import save_pins
from store.schema import ensure_schema
from store.verified_results import ResultError, check_signed_record, is_older_dialect, referenced_objects


def _bundled_data() -> Path:
    """data/ of the repository, installed as the package `kernelindex_data` (setup.py): found by
    that name in a wheel install and an editable one alike."""
    try:
        import kernelindex_data
    except ImportError:  # a checkout on sys.path that was never installed
        return Path(__file__).resolve().parents[1] / "data"
    return kernelindex_data.DIRECTORY


# The data that ships with KernelIndex (snapshots, the catalog, controlled runs, code pins, verified results).
BUNDLED_DATA = _bundled_data()


class BootstrapError(RuntimeError):
    """Committed data that cannot be loaded: the message names the file and the reason."""


# The code whose output a load is (its parsers, manifests, write paths): a change to any of it, or
# to this module, loads the bundled data again on the next start.
IMPORTING_CODE = ("loaders", "registry", "store")


def load_fingerprint(data_dir: Path) -> str:
    """sha256 of every file of `data_dir` and of IMPORTING_CODE's and this module's sources (~9 MB:
    about 20 ms), by relative path."""
    digest = hashlib.sha256()
    roots = [("data", data_dir)] + [(name, Path(importlib.import_module(name).__file__).parent) for name in IMPORTING_CODE]
    for label, root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(f"{label}/{path.relative_to(root).as_posix()}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def approved_runner_keys(data_dir: Path) -> dict:
    keys = {}
    for path in sorted((data_dir / "runners").glob("*.pem")):
        key = load_public_key(path.read_bytes())
        keys[keyid(key)] = key
    return keys


def _import_line(report) -> str:
    return f"{report.new} runs new, {report.unchanged} unchanged, {report.superseded} superseded"


def _step_name(loader) -> str:
    return f"the {loader.title} export" if isinstance(loader, WholeSourceLoader) else f"the {loader.title} snapshot"


def _whole_line(report) -> str:
    if report.skipped_as_imported:
        return "skipped: its import record says it is in"
    outcome = report.outcome
    return f"{outcome.runs_new} runs new, {outcome.runs_unchanged} unchanged" if outcome else "done"


def _set_line(outcome) -> str:
    return f"{outcome.count('new')} runs new, {outcome.count('unchanged')} unchanged, {outcome.count('superseded')} superseded"


def _controlled_set(paths: list[Path]) -> FormatSet:
    """Every controlled manifests.json, as one set of the format (objects shared between them
    once); BootstrapError naming the file and field of anything that is not the format."""
    items: dict[str, dict] = {}
    for path in paths:
        try:
            loaded = json.loads(path.read_text())
            format_set(loaded, where=str(path))  # each file is whole on its own
        except (json.JSONDecodeError, FormatError) as error:
            problems = getattr(error, "problems", None)
            raise BootstrapError(f"{path}: " + ("; ".join(f"{f}: {r}" for f, r in problems) if problems else str(error))) from None
        items |= {json.dumps(m, sort_keys=True): m for m in loaded}
    return format_set(list(items.values()), source=OUR_SOURCE)


async def bootstrap(uri: str, settings: Settings, data_dir: Path, say: Callable[[str], None] | None = None) -> None:
    """Load `data_dir` into the database at `uri`. `say` gets one line as each step starts and
    one when it ends (with what it wrote and how long it took): `serve`'s start-up progress."""
    say = say or (lambda line: None)
    client = make_client(uri)
    try:
        db = client[settings.database]
        await ensure_schema(db)
        # Groups stored before leaderboards existed get theirs (pages read the runs until then).
        await leaderboards.backfill(db)
        fingerprint = load_fingerprint(data_dir)
        if await bundled_loads.last_fingerprint(db) == fingerprint:
            say("bundled data: the files and the code that imports them are those of the last load: nothing to import")
            return
        await bundled_loads.forget(db)  # until this load ends: one stopped half-way is done again next time
        controlled = sorted((data_dir / "controlled").rglob("manifests.json"))
        verified = sorted((data_dir / "verified").glob("*.json"))
        sources = bundled_sources(data_dir)
        steps = [_step_name(loader) for loader, _ in sources]
        steps += [name for name, present in (("the controlled runs", bool(controlled)), ("the verified reruns", bool(verified))) if present]

        async def step(name: str, work, line) -> None:
            number = steps.index(name) + 1
            say(f"bundled data {number}/{len(steps)}: importing {name} ...")
            started = time.monotonic()
            result = await work()
            say(f"bundled data {number}/{len(steps)}: {name}: {line(result)} ({time.monotonic() - started:.1f} s)")

        for loader, folder in sources:
            if isinstance(loader, WholeSourceLoader):

                async def import_whole(loader=loader, folder=folder):
                    try:
                        return await run_import(loader, db, target=str(folder), console=None, skip_if_imported=True)
                    except loader.fatal as error:
                        problems = getattr(error, "problems", None) or [str(error)]
                        raise BootstrapError(f"{folder}: " + "; ".join(problems)) from None

                await step(_step_name(loader), import_whole, _whole_line)
            else:
                await step(
                    _step_name(loader),
                    lambda loader=loader, folder=folder: run_import(loader, db, snapshot_dir=folder, console=None),
                    _import_line,
                )
        if controlled:
            manifests = _controlled_set(controlled)
            await step("the controlled runs", lambda: publish_format_set(db, manifests), _set_line)
        pins_file = data_dir / "code-pins.json"
        if pins_file.is_file():
            try:
                await save_pins(db, parse_pins(json.loads(pins_file.read_text())))
            except (PinsError, json.JSONDecodeError) as error:
                raise BootstrapError(f"{pins_file}: {error}") from None
        approved = approved_runner_keys(data_dir)

        async def publish_signed() -> tuple[int, int]:
            checked = older = 0
            for path in verified:
                envelope = json.loads(path.read_text())["envelope"]
                if is_older_dialect(envelope):
                    older += 1  # its run is re-expressed in data/controlled (its signature covers the older digest)
                    continue
                try:
                    result = check_signed_record(envelope, approved)
                    await publish_verified(db, result, await referenced_objects(db, result.run))
                except ResultError as error:
                    raise BootstrapError(f"{path}: {error.code}: {error}") from None
                checked += 1
            return checked, older

        if verified:
            await step(
                "the verified reruns",
                publish_signed,
                lambda counts: (
                    f"{counts[0]} signed results checked" + (f", {counts[1]} of the older dialect left as files" if counts[1] else "")
                ),
            )
        await bundled_loads.record(db, fingerprint, datetime.now(UTC))
    finally:
        await client.close()
