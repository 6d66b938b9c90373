"""`kernelindex load`: read manifest files, publish them, and say exactly what was written.

Every failure is a LoadError (one or more `error:` lines for the CLI), never a traceback. Runs
are published in one transaction per load, so a failure while writing means none of them were
(objects a run references may already be stored: each is a complete manifest on its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cli.database import with_database
from loaders.manifest_files import read_manifests
from registry.manifests import ManifestError
from server.settings import Settings
from store.client import StoreError, StoreUnreachable
from store.manifest_set import SetReport, publish_set


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


def load(names: list[str], settings: Settings) -> LoadSummary:
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


def _first_line(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:300]
