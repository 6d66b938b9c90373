"""A subset of a workload suite's cases is a workload of its own, with its own digest: results
over some cases are never ranked against results over all of them."""

from __future__ import annotations

from registry.digest import manifest_digest
from registry.manifests import Manifest, make_manifest


def subset_suite(suite: Manifest, cases: list[int]) -> Manifest:
    if sorted(set(cases)) == [c.index for c in suite.spec.cases]:
        return suite
    picked = [suite.spec.cases[i] for i in sorted(set(cases))]
    spec = suite.spec.model_dump(mode="json", exclude_defaults=True)
    spec["cases"] = [{**case.model_dump(mode="json", exclude_defaults=True), "index": position} for position, case in enumerate(picked)]
    spec["source"] = {"source": "kernelindex", "benchmark": suite.metadata.name, "externalId": manifest_digest(suite)}
    label = "-".join(str(i) for i in sorted(set(cases)))
    return make_manifest(
        "WorkloadSuite",
        f"{suite.metadata.name}-cases-{label}"[:200],
        spec,
        title=f"{suite.metadata.title or suite.metadata.name} (cases {', '.join(str(i) for i in sorted(set(cases)))})",
    )
