"""A subset of a workload suite's cases is a workload of its own, with its own digest: results
over some cases are never ranked against results over all of them."""

from __future__ import annotations

from typing import Any

from registry.format import FormatManifest, format_digest, make_format_manifest


def subset_suite(suite: FormatManifest, cases: list[int]) -> FormatManifest:
    """The suite with the cases at these positions (v1alpha1). Each case keeps its externalId, so
    results over a subset name the same cases as results over the whole suite."""
    spec: dict[str, Any] = suite.spec.to_json()
    wanted = sorted(set(cases))
    if wanted == list(range(len(spec["cases"]))):
        return suite
    spec["cases"] = [spec["cases"][i] for i in wanted]
    label = "-".join(str(i) for i in wanted)
    metadata = suite.metadata.to_json()
    title = metadata.get("title") or metadata["name"]
    labels = {**(metadata.get("labels") or {}), "subset_of": format_digest(suite)}
    return make_format_manifest(
        "WorkloadSuite",
        {
            "name": f"{metadata['name']}-cases-{label}"[:200],
            "title": f"{title} (cases {', '.join(str(i) for i in wanted)})"[:200],
            "labels": labels,
        },
        spec,
    )
