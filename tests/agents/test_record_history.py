"""Record history seeded from the bundled catalog's record events (2,948 of them, 1,828 cohorts):
a cohort's `records` (oldest first) and `recordChanges` (newest first) are the catalog's changes
of #1, in its order and times, ending at the cohort's #1; the group page draws them as steps."""

from __future__ import annotations

from datetime import datetime

import httpx

from resolvers.ids import encode
from tests.loaders.catalog_exports import bundled_lines

FIELDS = "at cause runDigest previousDigest"


def _catalog_history() -> dict[str, list[tuple[datetime, str]]]:
    """comparisonKey → [(at, run digest)], oldest first, from the export itself."""
    digest_of = {line["row"]["id"]: line["row"]["runDigest"] for line in bundled_lines() if line["table"] == "benchmark_runs"}
    history: dict[str, list[tuple[datetime, str]]] = {}
    for line in bundled_lines():
        if line["table"] == "record_events":
            row = line["row"]
            history.setdefault(row["comparisonKey"], []).append((datetime.fromisoformat(row["at"]), digest_of[row["runId"]]))
    return {key: sorted(events) for key, events in history.items()}


def test_a_cohorts_records_are_the_catalogs_changes_of_number_one(stack):
    history = _catalog_history()
    assert sum(len(v) for v in history.values()) == 2948 and len(history) == 1828
    # the cohorts with the longest histories (the catalog's own counts, not ours)
    longest = sorted(history, key=lambda k: (-len(history[k]), k))[:3]
    assert len(history[longest[0]]) >= 3
    for key in longest:
        group_id = encode("ComparisonGroup", key)
        group = stack.data(
            f'{{ comparisonGroup(id: "{group_id}") {{ leader {{ digest }} records {{ {FIELDS} }} }} recordChanges(group: "{group_id}", first: 100) {{ {FIELDS} }} }}'
        )
        records = group["comparisonGroup"]["records"]
        catalog = [(datetime.fromisoformat(r["at"]), r["runDigest"]) for r in records[: len(history[key])]]
        assert catalog == history[key], key
        assert all(r["cause"] == "NEW_RUN" for r in records)
        assert [r["previousDigest"] for r in records[1:]] == [r["runDigest"] for r in records[:-1]]
        # the ledger ends at the cohort's #1 (ours, where our ranking made another run #1 at import)
        assert records[-1]["runDigest"] == group["comparisonGroup"]["leader"]["digest"]
        assert group["recordChanges"] == records[::-1]

        page = httpx.get(f"{stack.base}/groups/{group_id}", timeout=60)
        assert page.status_code == 200
        assert page.text.count('<circle class="step"') == len(records)
