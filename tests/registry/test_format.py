"""The v1alpha1 format (registry/format.py) against the format's own examples, which are copied
unchanged from SamMausberg/KernelIndex registry/examples/ (registry/schemas/NOTICE)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from loaders.manifest_files import read_documents
from registry.digest import digest_of
from registry.format import (
    EXAMPLES_DIR,
    KERNEL_KINDS,
    SCHEMA_FILES,
    SERVING_KINDS,
    FormatError,
    format_digest,
    parse_format_manifest,
)
from registry.manifests import ManifestError

VALID = sorted(EXAMPLES_DIR.glob("*.yaml"))
INVALID = sorted((EXAMPLES_DIR / "invalid").glob("*.yaml"))


def _example(kind: str) -> dict:
    (path,) = [p for p in VALID if p.stem == SCHEMA_FILES[kind]]
    (document,) = read_documents(path)
    return document


def _refusal(data: dict) -> list[tuple[str, str]]:
    with pytest.raises(FormatError) as caught:
        parse_format_manifest(data)
    return caught.value.problems


def test_every_kind_has_a_schema_and_an_example():
    assert set(SCHEMA_FILES) == set(KERNEL_KINDS) | set(SERVING_KINDS)
    assert {p.stem for p in VALID} == set(SCHEMA_FILES.values())


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_every_example_loads_and_round_trips(path: Path):
    (document,) = read_documents(path)
    manifest = parse_format_manifest(document)
    assert manifest.kind == document["kind"]
    # What we write back is what the example says (nothing added, nothing dropped; set-like
    # lists sorted: the implementation example lists its axes unsorted) ...
    expected = copy.deepcopy(document)
    if document["kind"] == "ImplementationRevision":
        support = expected["spec"]["support"]
        support.update({key: sorted(set(values)) for key, values in support.items()})
        assert support != document["spec"]["support"]
    assert manifest.to_json() == expected
    # ... and parsing that again gives the same identity.
    assert format_digest(parse_format_manifest(manifest.to_json())) == format_digest(manifest)


def test_the_examples_reference_each_other_by_the_digests_we_compute():
    """The examples were written upstream with digests the seed system computed: the run names
    its implementation, workload, protocol and environment, the workload its operation."""
    digest = {kind: format_digest(parse_format_manifest(_example(kind))) for kind in SCHEMA_FILES}
    run = _example("BenchmarkRun")["spec"]
    assert run["implementationDigest"] == digest["ImplementationRevision"]
    assert run["workloadDigest"] == digest["WorkloadCase"]
    assert run["protocolDigest"] == digest["BenchmarkProtocol"]
    assert run["environmentDigest"] == digest["ExecutionEnvironment"]
    assert _example("WorkloadCase")["spec"]["operationSpecDigest"] == digest["OperationSpec"]
    assert _example("ImplementationRevision")["spec"]["operation"]["specDigest"] == digest["OperationSpec"]
    serving = _example("ServingRun")["spec"]
    assert serving["modelDigest"] == digest["ModelRevision"]
    assert serving["configurationDigest"] == digest["ServingConfiguration"]
    assert serving["workloadDigest"] == digest["ServingWorkload"]
    assert _example("ServingConfiguration")["spec"]["stackDigest"] == digest["ServingStackRevision"]


# Each invalid example, with what it is refused for (its own comment says why it is invalid).
REASONS = {
    "ambiguous-duration": ("spec.timing.latencyNs.median", "ambiguous duration: 0.0000005 ms is not an integer nanosecond count"),
    "bad-digest": ("spec.operationSpecDigest", "expected sha256:<64 lowercase hex>"),
    "unknown-field": ("spec.popularity", "unknown field"),
}


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_every_invalid_example_is_refused_with_its_reason(path: Path):
    if path.stem == "duplicate-key":
        # Refused when the YAML is read, before any model sees it.
        with pytest.raises(ManifestError) as caught:
            read_documents(path)
        ((where, reason),) = caught.value.problems
        assert where == str(path)
        assert "duplicate key 'name'" in reason
        return
    (document,) = read_documents(path)
    problems = _refusal(document)
    assert problems == [REASONS[path.stem]]


def test_json_duplicate_keys_are_refused_too(tmp_path):
    path = tmp_path / "project.json"
    path.write_text(
        '{"apiVersion": "kernelindex.dev/v1alpha1", "kind": "SoftwareProject", "metadata": {"name": "a", "name": "b"}, "spec": {"name": "x"}}'
    )
    with pytest.raises(ManifestError, match="duplicate key 'name'"):
        read_documents(path)


def test_yaml_times_stay_text():
    (document,) = read_documents(EXAMPLES_DIR / "benchmark-run.yaml")
    assert document["spec"]["observedAt"] == "2026-08-01T12:00:00Z"


def test_durations_are_normalized_to_integer_nanoseconds():
    run = _example("BenchmarkRun")
    as_text = copy.deepcopy(run)
    as_text["spec"]["timing"]["latencyNs"]["median"] = "0.00000812 s"
    as_text["spec"]["timing"]["latencyNs"]["confidence95"] = ["0.008095 ms", "8151ns"]
    parsed = parse_format_manifest(as_text)
    assert parsed.spec.timing.latencyNs.median == 8120
    assert parsed.spec.timing.latencyNs.confidence95 == (8095, 8151)
    # One duration, one identity: the digest is that of the integer form.
    assert format_digest(parsed) == format_digest(parse_format_manifest(run))
    as_text["spec"]["timing"]["latencyNs"]["median"] = "8120 parsecs"
    assert _refusal(as_text)[0][0] == "spec.timing.latencyNs.median"
    # The arithmetic is IEEE double, as upstream's: 8.12 × 1000 is 8119.999999999999 there too.
    as_text["spec"]["timing"]["latencyNs"]["median"] = "8.12 us"
    assert _refusal(as_text) == [("spec.timing.latencyNs.median", "ambiguous duration: 8.12 us is not an integer nanosecond count")]


def test_latency_needs_a_median_or_a_mean():
    run = _example("BenchmarkRun")
    run["spec"]["timing"]["latencyNs"] = {"p05": 1, "p95": 2}
    assert _refusal(run) == [("spec.timing.latencyNs", "latencyNs requires median or mean")]


def test_set_like_lists_are_sorted_and_deduplicated():
    implementation = _example("ImplementationRevision")
    shuffled = copy.deepcopy(implementation)
    shuffled["spec"]["support"]["dtypes"] = ["fp16", "bf16", "fp16"]
    ordered = copy.deepcopy(implementation)
    ordered["spec"]["support"]["dtypes"] = ["bf16", "fp16"]
    parsed = parse_format_manifest(shuffled)
    assert parsed.spec.support.dtypes == ["bf16", "fp16"]
    assert format_digest(parsed) == format_digest(parse_format_manifest(ordered))


def test_rules_of_the_format_beyond_its_json_schemas():
    operation = _example("OperationSpec")
    operation["spec"]["inputs"][0]["scalar"] = {"dtype": "fp32"}  # also has a tensor
    assert _refusal(operation) == [("spec.inputs.0", "an argument is exactly one of tensor or scalar")]

    operation = _example("OperationSpec")
    del operation["spec"]["axes"]["hidden"]["value"]
    assert _refusal(operation) == [("spec.axes.hidden", "a constant axis requires a value")]

    operation = _example("OperationSpec")
    operation["spec"]["axes"]["half"] = {"role": "derived", "type": "integer"}
    assert _refusal(operation) == [("spec.axes.half", "a derived axis requires an expression")]

    project = _example("SoftwareProject")
    project["spec"]["repository"] = "http://example.invalid/meridian/kernels"
    assert _refusal(project) == [("spec.repository", "expected an https URL")]

    implementation = _example("ImplementationRevision")
    implementation["metadata"]["sourceRefs"] = [{"url": "ftp://example.invalid/x"}]
    assert _refusal(implementation) == [("metadata.sourceRefs.0.url", "expected an https URL")]


def test_strictness_names_every_bad_field():
    run = _example("BenchmarkRun")
    run["spec"]["timing"]["latencyNs"]["p50"] = 1  # not a statistic of the format
    run["spec"]["status"] = "incorrect"  # our old dialect's status
    run["spec"]["timing"]["samples"] = True  # a bool is not an integer
    run["metadata"]["annotations"] = {"a": "b"}  # the format's metadata has none
    del run["spec"]["observedAt"]
    problems = dict(_refusal(run))
    assert problems["spec.timing.latencyNs.p50"] == "unknown field"
    assert problems["spec.status"].startswith("Input should be 'passed'")
    assert problems["spec.timing.samples"] == "Input should be a valid integer"
    assert problems["metadata.annotations"] == "unknown field"
    assert problems["spec.observedAt"] == "required"

    case = _example("WorkloadCase")
    case["spec"]["tensors"]["input"]["shape"] = [-1, 4096]
    case["metadata"]["labels"] = {"Bad-Key": "x"}
    problems = dict(_refusal(case))
    assert problems["spec.tensors.input.shape.0"] == "must be >= 0"
    assert "metadata.labels.Bad-Key.[key]" in problems


def test_envelope_and_limits():
    project = _example("SoftwareProject")
    assert _refusal({**project, "apiVersion": "kernelindex.dev/v2"}) == [("apiVersion", "must be 'kernelindex.dev/v1alpha1'")]
    assert _refusal({**project, "kind": "Attestation"})[0][0] == "kind"
    assert _refusal([project]) == [("", "a manifest must be a JSON object")]
    deep = {**project, "spec": {**project["spec"], "name": "x" * 70_000}}
    assert _refusal(deep)[0][0] == "spec.name"  # registry/limits.py, before the model


def test_metadata_never_changes_the_digest():
    project = _example("SoftwareProject")
    renamed = {**project, "metadata": {"name": "another-name", "title": "Another"}}
    assert format_digest(parse_format_manifest(renamed)) == format_digest(parse_format_manifest(project))
    body = {"apiVersion": project["apiVersion"], "kind": project["kind"], "spec": project["spec"]}
    assert format_digest(parse_format_manifest(project)) == digest_of(body)


def test_make_format_manifest_builds_and_validates():
    from registry.format import make_format_manifest

    project = make_format_manifest("SoftwareProject", {"name": "meridian-kernels"}, {"name": "Meridian Kernels"})
    assert project.identity() == {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "SoftwareProject", "spec": {"name": "Meridian Kernels"}}
    with pytest.raises(FormatError) as caught:
        make_format_manifest("SoftwareProject", {"name": "Bad Name"}, {"name": "x", "stars": 3})
    assert dict(caught.value.problems) == {"metadata.name": "must match ^[a-z0-9][a-z0-9._-]*$", "spec.stars": "unknown field"}


def test_an_integral_float_is_an_integer_and_digests_alike():
    case = _example("WorkloadCase")
    as_floats = copy.deepcopy(case)
    as_floats["spec"]["axes"]["tokens"] = 2048.0
    parsed = parse_format_manifest(as_floats)
    assert parsed.spec.axes["tokens"] == 2048 and type(parsed.spec.axes["tokens"]) is int
    assert format_digest(parsed) == format_digest(parse_format_manifest(case))
    as_floats["spec"]["axes"]["tokens"] = 2048.5
    assert _refusal(as_floats) == [("spec.axes.tokens", "Input should be a valid integer")]


def test_conformance_of_the_formats_own_examples_by_kind(report):
    """Item 1 of #23 in one table: each kind's example loads; each invalid file is refused with its
    reason. The examples are copied into registry/examples/ (a clone has no upstream reference)."""
    lines = [f"{'kind':<24}{'example':<32}{'loaded':>8}"]
    for kind, stem in SCHEMA_FILES.items():
        (document,) = read_documents(EXAMPLES_DIR / f"{stem}.yaml")
        assert parse_format_manifest(document).kind == kind
        lines.append(f"{kind:<24}{stem + '.yaml':<32}{'yes':>8}")
    lines.append(f"{len(SCHEMA_FILES)} kinds, {len(VALID)} examples loaded; refused:")
    for path in INVALID:
        try:
            (document,) = read_documents(path)
            parse_format_manifest(document)
        except ManifestError as error:
            where, reason = error.problems[0]
            reason = next((line for line in reason.splitlines() if "duplicate key" in line), reason.splitlines()[0])
            lines.append(f"  invalid/{path.name}: {Path(where).name if where == str(path) else where}: {reason}")
            continue
        raise AssertionError(f"{path.name} was loaded")
    report("v1alpha1 conformance of the format's examples (registry/examples/)", lines)
    assert len(VALID) == len(SCHEMA_FILES) == 13 and len(INVALID) == 4
