"""`kernelindex load`: read manifest files, publish them, and say exactly what was written.

Every failure is a LoadError (one or more `error:` lines for the CLI), never a traceback. Runs
are published in one transaction per load, so a failure while writing means none of them were
(objects a run references may already be stored: each is a complete manifest on its own).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cli.database import with_database
from loaders.common.format_set import format_set, is_format_set
from loaders.manifest_files import read_documents, read_manifests
from loaders.pipeline import publish_format_set
from registry.format import FormatError
from registry.manifests import ManifestError
from server.settings import Settings
from store.client import StoreError, StoreUnreachable
from store.manifest_set import SetReport, publish_set
from store.publish import PublishOutcome


class LoadError(Exception):
    """A failure to report as one line."""


@dataclass
class LoadSummary:
    manifests: int
    report: SetReport

    def line(self) -> str:
        counts = {"new": 0, "unchanged": 0, "superseded": 0}
        for outcome in self.report.runs:
            counts[outcome.status] += 1
        return (
            f"loaded {self.manifests} manifests: objects {self.report.objects_new} new, {self.report.objects_unchanged} unchanged; "
            f"runs {counts['new']} new, {counts['unchanged']} unchanged, {counts['superseded']} superseded"
        )


def read_files(names: list[str]):
    """Every manifest of every file; ManifestError naming each problem (nothing is written)."""
    manifests, problems = [], []
    for name in names:
        path = Path(name)
        if not path.is_file():
            problems.append((name, "no such file"))
            continue
        try:
            manifests += read_manifests(path)
        except ManifestError as error:
            problems += error.problems
    if problems:
        raise ManifestError(problems)
    return manifests


def read_format_items(names: list[str]) -> list | None:
    """The files' manifests when every one of them is the v1alpha1 format (our harness's
    manifests.json, the format's examples), each once; None otherwise (the older dialect)."""
    items: list = []
    for name in names:
        path = Path(name)
        if not path.is_file():
            return None
        try:
            items += read_documents(path)
        except ManifestError:
            return None
    if not items or not is_format_set(items):
        return None
    return list({json.dumps(m, sort_keys=True): m for m in items}.values())


def load(names: list[str], settings: Settings) -> LoadSummary:
    formatted = read_format_items(names)
    if formatted is not None:
        return _load_format(formatted, settings)
    manifests = read_files(names)
    try:
        report = with_database(settings, lambda db: publish_set(db, manifests))
    except StoreUnreachable as error:
        raise LoadError(
            f"the database stopped answering during the load ({type(error).__name__}); no run of this load was "
            "stored unless the last commit went through just before: load the same files again (it is idempotent)"
        ) from None
    except StoreError as error:
        raise LoadError(f"the database refused the load: {_first_line(error)}; no run of this load was stored") from None
    return LoadSummary(len(manifests), report)


def _load_format(items: list, settings: Settings) -> LoadSummary:
    """Assembled once the database answers (as the older dialect's files are published): a run
    whose objects are neither in the files is refused naming each reference, nothing written."""
    try:
        manifests = format_set(items)
    except FormatError as error:
        manifests = error
    try:
        outcome = with_database(settings, lambda db: _publish_or_raise(db, manifests))
    except StoreUnreachable as error:
        raise LoadError(
            f"the database stopped answering during the load ({type(error).__name__}); load the same files again (it is idempotent)"
        ) from None
    except StoreError as error:
        raise LoadError(f"the database refused the load: {_first_line(error)}") from None
    parts = [
        getattr(b, role)
        for b in manifests.bundles
        for role in ("run", "operation", "workload", "implementation", "protocol", "environment")
    ]
    count = len({id(m) for m in parts}) + len(manifests.loose)
    report = SetReport(objects_new=outcome.objects_new, objects_unchanged=outcome.objects_unchanged)
    report.runs = [PublishOutcome(status=status, run_digest=digest) for digest, status in outcome.runs.items()]  # type: ignore[arg-type]
    return LoadSummary(count, report)


async def _publish_or_raise(db, manifests):
    if isinstance(manifests, FormatError):
        raise ManifestError(manifests.problems)
    return await publish_format_set(db, manifests)


def _first_line(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:300]
