"""registry/limits.check_limits names the value over a limit by its path in the manifest."""

from __future__ import annotations

import enum

import pytest

from registry.limits import MAX_DEPTH, LimitError, check_limits


class Flavour(str, enum.Enum):
    long = "x" * 70_000


def _error(data) -> str:
    with pytest.raises(LimitError) as caught:
        check_limits(data)
    return str(caught.value)


def test_paths_name_keys_and_indices_of_the_value_over_a_limit():
    assert (
        _error({"spec": {"cases": [{"axes": {}}, {"axes": {"n": 2**64}}]}}) == "spec.cases[1].axes.n: an integer outside the 64-bit range"
    )
    assert (
        _error({"metadata": {"labels": {"k" * 100: "\ud800"}}})
        == f"metadata.labels.{'k' * 64}: a lone surrogate is not text (not encodable as UTF-8)"
    )
    assert _error({1: [{"x": Flavour.long}]}) == "1[0].x: a string of 70,000 characters; at most 65,536"
    assert _error(["ok", "y" * 70_000]) == "[1]: a string of 70,000 characters; at most 65,536"
    assert _error({"k": {"x" * 70_000: 1}}) == "k: a key of 70,000 characters"


def test_depth_counts_from_the_document():
    deepest_allowed = "leaf"
    for _ in range(MAX_DEPTH):
        deepest_allowed = [deepest_allowed]
    check_limits(deepest_allowed)
    assert _error({"a": deepest_allowed}) == "a" + "[0]" * MAX_DEPTH + f": nested deeper than {MAX_DEPTH} levels"


def test_ordinary_values_pass():
    check_limits({"apiVersion": "v", "spec": {"n": [1, 2.5, None, True, "s", {"deep": []}]}, "metadata": {}})
