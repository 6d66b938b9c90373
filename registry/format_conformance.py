"""How a catalog export conforms to the v1alpha1 format, counted by kind: each manifest it holds
is loaded (it validates as v1alpha1 and the digest we compute is the one the export records) or
refused (with its reason). bench/verify_format.py prints the table; the bundled export's test
(tests/registry/test_bundled_catalog_format.py) asserts it and writes it into the test output."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from registry.catalog_format import manifests_of
from registry.format import SCHEMA_FILES, FormatError, format_digest, parse_format_manifest


@dataclass
class KindCount:
    manifests: int = 0  # in the export, every occurrence (a run's protocol is in each of its rows)
    digests: set[str] = field(default_factory=set)  # distinct objects loaded
    refused: list[str] = field(default_factory=list)  # "<name>: <reason>"

    @property
    def loaded(self) -> int:
        return self.manifests - len(self.refused)


@dataclass
class Conformance:
    kinds: dict[str, KindCount] = field(default_factory=lambda: {kind: KindCount() for kind in SCHEMA_FILES})

    def check(self, manifest: dict, expected: str | None) -> None:
        count = self.kinds.setdefault(str(manifest.get("kind")), KindCount())
        count.manifests += 1
        name = (manifest.get("metadata") or {}).get("name")
        try:
            digest = format_digest(parse_format_manifest(manifest))
        except FormatError as error:
            count.refused.append(f"{name}: {error}")
            return
        if expected is not None and digest != expected:
            count.refused.append(f"{name}: digest {digest} is not the export's {expected}")
            return
        count.digests.add(digest)

    def check_rows(self, items: Iterable[dict]) -> Conformance:
        """`items`: the export's lines, `{"table": ..., "row": {...}}`."""
        for item in items:
            for manifest, expected in manifests_of(item["table"], item["row"]):
                self.check(manifest, expected)
        return self

    def table(self) -> list[str]:
        """One line per kind: manifests, distinct objects, loaded, refused."""
        lines = [f"{'kind':<24}{'manifests':>10}{'objects':>10}{'loaded':>10}{'refused':>10}"]
        for kind, count in self.kinds.items():
            lines.append(f"{kind:<24}{count.manifests:>10,}{len(count.digests):>10,}{count.loaded:>10,}{len(count.refused):>10,}")
        total = sum(c.manifests for c in self.kinds.values()), sum(len(c.refused) for c in self.kinds.values())
        lines.append(
            f"{'all kinds':<24}{total[0]:>10,}{sum(len(c.digests) for c in self.kinds.values()):>10,}{total[0] - total[1]:>10,}{total[1]:>10,}"
        )
        return lines

    def refusals(self) -> list[str]:
        return [f"{kind} {reason}" for kind, count in self.kinds.items() for reason in count.refused]
