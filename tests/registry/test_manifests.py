import pytest

from registry.manifests import ManifestError, make_manifest, parse_manifest
from tests import factories


def _run_dict():
    return factories.run_bundle("1").run.to_json()


def test_unknown_field_is_rejected_with_its_path():
    data = _run_dict()
    data["spec"]["timing"]["latencyNS"] = {"mean": 1}
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data)
    assert ("spec.timing.latencyNS", "unknown field") in caught.value.problems


def test_missing_field_and_wrong_type_are_named():
    data = _run_dict()
    del data["spec"]["protocolDigest"]
    data["spec"]["timing"]["latencyNs"]["mean"] = "fast"
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data)
    paths = [path for path, _ in caught.value.problems]
    assert "spec.protocolDigest" in paths
    assert "spec.timing.latencyNs.mean" in paths


def test_envelope_errors():
    with pytest.raises(ManifestError, match="apiVersion"):
        parse_manifest({**_run_dict(), "apiVersion": "kernelindex.dev/v2"})
    with pytest.raises(ManifestError, match="kind"):
        parse_manifest({**_run_dict(), "kind": "Banana"})
    with pytest.raises(ManifestError, match="a manifest must be a JSON object"):
        parse_manifest([1, 2])


def test_primary_statistic_must_have_a_value():
    data = _run_dict()
    data["spec"]["timing"]["primaryStatistic"] = "median"
    with pytest.raises(ManifestError, match="primaryStatistic"):
        parse_manifest(data)


def test_workload_cases_must_be_indexed_in_order():
    defn = factories.definition()
    with pytest.raises(ManifestError, match="index"):
        make_manifest(
            "WorkloadSuite",
            "w",
            {"definitionDigest": "sha256:" + "0" * 64, "cases": [{"index": 1, "axes": {"n": 1}}]},
        )
    assert defn.kind == "OperationSpec"


def test_observed_at_must_be_utc_iso():
    data = _run_dict()
    data["spec"]["observedAt"] = "16/08/2026"
    with pytest.raises(ManifestError, match="observedAt"):
        parse_manifest(data)
