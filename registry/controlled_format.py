"""Our controlled harness's evidence in the KernelIndex v1alpha1 format.

The harness (kernels/harness) measures a WorkloadSuite case by case. The format's BenchmarkRun has
no per-case results, so, as the catalog's GPU MODE runs over a suite do, a run's primary
measurement is one `measurements` entry, the geometric mean over cases of the per-case medians
(`latency:geomean:ns`); the suite-level aggregates follow as further entries. Every per-case
result goes into the format's own places, never a new field, so every digest is the one the seed
system computes:

- `sourceNative.metrics`: `case<i>_<name>` numbers (CASE_METRICS below; one per output and check;
  `case<i>_sample_<k>`, every timing sample in order);
- `evidence.rawSamples`: the harness's raw.json (every sample and correctness round), by uri and
  sha256; `evidence.logs`: its cli.log where kept;
- `metadata.labels`: implementation, operation, and `reexpressed_from` (the digest the older
  dialect gave the same run).

`reexpress` turns manifests of the older dialect (data/controlled before 2026-12-03, the verified
envelopes) into the format; `cases_of` reads a format run's per-case results back for the dossier.
Pure: no I/O.
"""

from __future__ import annotations

import math
import re
import statistics
from typing import Any

from registry.architectures import FORMAT_NAMES, declared
from registry.digest import manifest_digest
from registry.format import API_VERSION, format_digest, make_format_manifest
from registry.manifests import parse_manifest

SOURCE = "kernelindex"
FAMILY = "normalization"  # the catalog's family of SOL-ExecBench 051, the same math
PRIMARY = {"metric": "latency", "statistic": "geomean", "unit": "ns"}
# The format's run statuses for the harness's own
RUN_STATUS = {"passed": "passed", "incorrect": "incorrect_numerical", "failed": "runtime_error"}
CASE_STATUS_CODE = {"passed": 0, "incorrect": 1, "failed": 2}
CASE_STATUS = {code: status for status, code in CASE_STATUS_CODE.items()}
DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16", "int32": "int32", "int64": "int64"}
LATENCY_STATISTICS = ("median", "p25", "p75", "min", "max", "mean", "std")
# case field (older dialect / the harness) -> metric suffix
CASE_METRICS = {
    "referenceLatencyNs": "reference_latency_ns",
    "eagerLatencyNs": "eager_latency_ns",
    "solNs": "sol_ns",
    "solScore": "sol_score",
}
# A per-case metric's name (`case<i>_<name>`, case_metrics below)
PER_CASE_METRIC = re.compile(r"^case\d+_")
# aggregate (older dialect) -> measurement
AGGREGATES = {
    "caseCount": ("cases", "count", "cases"),
    "casesPassed": ("cases_passed", "count", "cases"),
    "casesFasterThanReference": ("cases_faster_than_reference", "count", "cases"),
    "meanSolScore": ("sol_score", "mean", "ratio"),
    "geomeanSolNs": ("sol_latency", "geomean", "ns"),
    "geomeanEagerLatencyNs": ("eager_latency", "geomean", "ns"),
    "geomeanReferenceLatencyNs": ("reference_latency", "geomean", "ns"),
}


def _manifest(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Validated by the format's models (FormatError names a bad field), as JSON."""
    return make_format_manifest(kind, metadata, spec).to_json()


def _metadata(old: dict[str, Any], **extra: Any) -> dict[str, Any]:
    meta = {"name": old["metadata"]["name"]}
    if old["metadata"].get("title"):
        meta["title"] = old["metadata"]["title"]
    return meta | {k: v for k, v in extra.items() if v}


# ---------------------------------------------------------------- the objects


def operation(old: dict[str, Any]) -> dict[str, Any]:
    spec = old["spec"]

    def argument(name: str, arg: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "tensor": {"shape": arg["shape"], "dtype": DTYPES.get(arg["dtype"], arg["dtype"])}}

    axes = {}
    for name, axis in spec["axes"].items():
        axes[name] = (
            {"role": "variable", "type": "integer"}
            if axis["type"] == "var"
            else {"role": "constant", "type": "integer", "value": axis["value"]}
        )
    relations = spec.get("relations") or []
    description = spec.get("description", "")
    for relation in relations:
        if relation.get("notes"):
            description += f" {relation['notes']}"
    labels = {"project": SOURCE, "reference_path": (spec.get("reference") or {}).get("url"), "tags": ",".join(spec.get("tags") or [])}
    for relation in relations[:1]:
        labels |= {
            "related_source": relation.get("source"),
            "related_benchmark": relation.get("benchmark"),
            "relation": relation.get("relation"),
        }
    return _manifest(
        "OperationSpec",
        _metadata(old, description=description[:2000], labels={k: v[:200] for k, v in labels.items() if v}),
        {
            "family": FAMILY,
            "axes": axes,
            "inputs": [argument(name, arg) for name, arg in spec["inputs"].items()],
            "outputs": [argument(name, arg) for name, arg in spec["outputs"].items()],
            "semantics": {"expression": spec.get("semantics", "")[:2000], "mutation": "none", "determinism": "deterministic"},
            "reference": {"language": "python"},
        },
    )


def suite(old: dict[str, Any], operation_digest: str) -> dict[str, Any]:
    spec = old["spec"]
    source = spec.get("source") or {}
    labels = {"source": source.get("source"), "source_benchmark": source.get("benchmark")}
    return _manifest(
        "WorkloadSuite",
        _metadata(old, description=spec.get("aggregation"), labels={k: v for k, v in labels.items() if v}),
        {
            "operationSpecDigest": operation_digest,
            "cases": [{"externalId": str(case["index"]), "axes": case["axes"]} for case in spec["cases"]],
            "correctness": spec["correctness"],
            "aggregation": {"metric": PRIMARY["metric"], "statistic": PRIMARY["statistic"]},
        },
    )


def protocol(old: dict[str, Any]) -> dict[str, Any]:
    spec = old["spec"]
    correctness, measurement, comparability = spec["correctness"], spec["measurement"], spec["comparability"]
    cuda = measurement["timer"] != "wall_clock_perf_counter"
    labels = {
        "rounds": str(correctness["rounds"]),
        "atol": str(correctness["atol"]),
        "rtol": str(correctness["rtol"]),
        "min_matched_ratio": str(correctness["minMatchedRatio"]),
        "l2_flush": str(measurement["l2Flush"]).lower(),
        "case_statistic": measurement["primaryStatistic"],
    }
    notes = measurement["notes"].replace("The run's latencyNs.median (= geomean) is", "The run's primary measurement (latency, geomean) is")
    description = f"Correctness: {correctness['policy']} Measurement: {notes}"
    out_spec: dict[str, Any] = {
        "harness": spec["harness"],
        "measurement": {
            "timer": measurement["timer"],
            "primaryStatistic": PRIMARY["statistic"],
            "warmupIterations": measurement["warmups"],
            "samples": measurement["samples"],
            "outlierPolicy": f"none: each case's {measurement['primaryStatistic']} of its samples; the run's value is their geomean",
        },
        "correctness": {"reference": correctness["reference"], "comparator": correctness["comparator"]},
        "comparability": {"family": comparability["family"], "notes": comparability["notes"][:1000]},
    }
    if cuda:
        out_spec["measurement"]["synchronization"] = "cuda_events"
        out_spec["devicePolicy"] = {"clocksLocked": False}
    return _manifest("BenchmarkProtocol", _metadata(old, description=description[:2000], labels=labels), out_spec)


def environment(old: dict[str, Any]) -> dict[str, Any]:
    spec = old["spec"]
    software = dict(spec.get("software") or {})
    libraries = dict(software.pop("libraries", {}) or {})
    out: dict[str, Any] = {}
    # The OS string names the lent machine's kernel build ("…-fc-v657-…"), which changes from one
    # lease to the next: kept on the run (label `operating_system`), not in the environment, whose
    # digest is its cohort's environment key.
    for ours, theirs in (("driver", "driver"), ("cuda", "cudaToolkit")):
        if software.get(ours):
            out[theirs] = software[ours]
    if "torch" in libraries:
        out["framework"] = {"name": "torch", "version": libraries.pop("torch")}
    if libraries:
        out["libraries"] = libraries
    return _manifest("ExecutionEnvironment", _metadata(old), {"hardware": spec["hardware"], "software": out})


def support_architectures(patterns: tuple[str, ...] | list[str]) -> list[str]:
    """Our declared architecture patterns (registry/architectures.py) as the format's names, which
    allow no wildcard: "*" is `any`, "sm_*" is `sm_any`."""
    return sorted({FORMAT_NAMES.get(p, p) for p in patterns})


def implementation(old: dict[str, Any], operation_digest: str, pins: dict[str, Any]) -> dict[str, Any]:
    spec = old["spec"]
    code = spec["code"]
    pin = pins.get(code["digest"]) or {}
    revision: dict[str, Any] = {"version": spec["revision"]}
    if code.get("commit") or pin.get("commit"):
        revision["commit"] = code.get("commit") or pin["commit"]
    module, _, symbol = (code.get("entryPoint") or "").partition(":")
    callable_: dict[str, Any] = {"language": code.get("language", "python")}
    if code.get("path"):
        callable_["path"] = code["path"]
    if code.get("entryPoint"):
        callable_["symbol"] = code["entryPoint"]
    variant = code.get("variant") or pin.get("variant") or {}
    labels = {"project": spec["project"], "module": module} | {f"variant_{k}": str(v) for k, v in sorted(variant.items())}
    description = (old["metadata"].get("annotations") or {}).get("description")
    return _manifest(
        "ImplementationRevision",
        _metadata(old, description=description, labels={k: v[:200] for k, v in labels.items() if v and k.replace("_", "a").isalnum()}),
        {
            "projectRevision": revision,
            "operation": {"specDigest": operation_digest},
            "callable": callable_,
            "support": {"hardwareArchitectures": support_architectures(declared(spec)), "dtypes": ["bf16"]},
            "source": {"contentDigest": code["digest"]},
            "licensing": {},
        },
    )


# ---------------------------------------------------------------- the run


def case_metrics(case: dict[str, Any]) -> dict[str, float]:
    """One case's results (the harness's case dict) as `case<i>_<name>` numbers."""
    prefix = f"case{case['index']}_"
    out: dict[str, float] = {f"{prefix}status": CASE_STATUS_CODE[case["status"]]}
    latency = dict(case.get("latencyNs") or {})
    samples = case.get("samplesNs") or []
    if len(samples) >= 2 and "std" not in latency:
        latency["std"] = round(statistics.stdev(samples))
    for statistic in LATENCY_STATISTICS:
        if statistic in latency:
            out[f"{prefix}latency_ns_{statistic}"] = latency[statistic]
    if samples or case.get("sampleCount"):
        out[f"{prefix}sample_count"] = len(samples) or case["sampleCount"]
    for position, sample in enumerate(samples):  # every sample, in order: the run carries its own evidence
        out[f"{prefix}sample_{position}"] = sample
    for field, name in CASE_METRICS.items():
        if case.get(field) is not None:
            out[prefix + name] = case[field]
    check = case.get("correctness") or {}
    if "rounds" in check:
        out[f"{prefix}correctness_rounds"] = check["rounds"]
    for output, result in (check.get("outputs") or {}).items():
        out[f"{prefix}{output}_matched_ratio"] = result["matchedRatio"]
        if result.get("maxAbsError") is not None:
            out[f"{prefix}{output}_max_abs_error"] = result["maxAbsError"]
        out[f"{prefix}{output}_passed"] = 1 if result["passed"] else 0
    return out


def run_measurements(aggregates: dict[str, Any], mean_ns: float | None) -> list[dict[str, Any]]:
    """The primary measurement first (the geomean over cases), then the suite's aggregates."""
    out = [{**PRIMARY, "value": aggregates["geomeanLatencyNs"]}]
    if mean_ns is not None:
        out.append({"metric": "latency", "statistic": "mean", "unit": "ns", "value": mean_ns})
    for field, (metric, statistic, unit) in AGGREGATES.items():
        if field in aggregates:
            out.append({"metric": metric, "statistic": statistic, "unit": unit, "value": aggregates[field]})
    return out


def run_correctness(cases: list[dict[str, Any]], comparator: str) -> dict[str, Any]:
    ratios, errors = [], []
    for case in cases:
        for result in ((case.get("correctness") or {}).get("outputs") or {}).values():
            ratios.append(result["matchedRatio"])
            if result.get("maxAbsError") is not None:
                errors.append(result["maxAbsError"])
    out: dict[str, Any] = {"comparator": comparator}
    if errors:
        out["maximumAbsoluteError"] = max(errors)
    if ratios:
        out["matchedRatio"] = min(ratios)
    return out


def run(
    *,
    name: str,
    title: str | None,
    labels: dict[str, str],
    status: str,
    observed_at: str,
    cases: list[dict[str, Any]],
    aggregates: dict[str, Any],
    mean_ns: float | None,
    digests: dict[str, str],
    benchmark: str,
    comparator: str,
    raw_samples: dict[str, str] | None = None,
    logs: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A BenchmarkRun of the harness. `digests`: workload, implementation, protocol, environment;
    `raw_samples` / `logs`: {uri, digest} of the raw.json / cli.log beside it."""
    metrics: dict[str, float] = {}
    for case in cases:
        metrics |= case_metrics(case)
    evidence = {k: v for k, v in (("rawSamples", raw_samples), ("logs", logs)) if v}
    spec: dict[str, Any] = {
        "implementationDigest": digests["implementation"],
        "workloadDigest": digests["workload"],
        "protocolDigest": digests["protocol"],
        "environmentDigest": digests["environment"],
        "status": RUN_STATUS[status],
        "correctness": run_correctness(cases, comparator),
        "measurements": run_measurements(aggregates, mean_ns),
        "sourceNative": {"source": SOURCE, "benchmark": benchmark, "externalId": name, "metrics": metrics},
        "observedAt": observed_at,
    }
    if evidence:
        spec["evidence"] = evidence
    metadata = {"name": name, "labels": labels} | ({"title": title} if title else {})
    return _manifest("BenchmarkRun", metadata, spec)


# ---------------------------------------------------------------- the older dialect, re-expressed


def old_digest(manifest: dict[str, Any]) -> str:
    """The digest the older dialect gave a manifest (its models, registry/manifests.py)."""
    return manifest_digest(parse_manifest(manifest))


def reexpress(
    old: list[dict[str, Any]],
    *,
    pins: dict[str, Any],
    raw_samples: dict[str, str] | None = None,
    logs: dict[str, str] | None = None,
    objects: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The manifests of the older dialect in the format: each object, then each run naming the
    format's digests. A run may name objects not in `old` (a verified envelope carries only its
    run and environment): `objects` maps older digests to their older manifests."""
    by_digest = {**(objects or {}), **{old_digest(m): m for m in old}}
    converted: dict[str, dict[str, Any]] = {}  # older digest -> format manifest
    order: list[str] = []

    def convert(digest: str) -> dict[str, Any]:
        if digest in converted:
            return converted[digest]
        m = by_digest[digest]
        kind = m["kind"]
        if kind == "OperationSpec":
            new = operation(m)
        elif kind == "WorkloadSuite":
            new = suite(m, format_digest_of(convert(m["spec"]["definitionDigest"])))
        elif kind == "BenchmarkProtocol":
            new = protocol(m)
        elif kind == "ExecutionEnvironment":
            new = environment(m)
        elif kind == "ImplementationRevision":
            new = implementation(m, format_digest_of(convert(m["spec"]["definitionDigest"])), pins)
        else:
            raise ValueError(f"{m['metadata']['name']}: cannot re-express a {kind}")
        converted[digest] = new
        order.append(digest)
        return new

    runs = []
    for m in old:
        if m["kind"] != "BenchmarkRun":
            continue
        spec = m["spec"]
        workload = by_digest[spec["workloadDigest"]]
        digests = {
            "workload": format_digest_of(convert(spec["workloadDigest"])),
            "implementation": format_digest_of(convert(spec["implementationDigest"])),
            "protocol": format_digest_of(convert(spec["protocolDigest"])),
            "environment": format_digest_of(convert(spec["environmentDigest"])),
        }
        runs.append(
            run(
                name=m["metadata"]["name"],
                title=m["metadata"].get("title"),
                labels=_run_labels(m, by_digest[spec["environmentDigest"]]),
                status=spec["status"],
                observed_at=spec["observedAt"],
                cases=spec["cases"],
                aggregates=spec["aggregates"],
                mean_ns=spec["timing"]["latencyNs"].get("mean"),
                digests=digests,
                benchmark=workload["metadata"]["name"],
                comparator=workload["spec"]["correctness"]["comparator"],
                raw_samples=raw_samples,
                logs=logs,
            )
        )
    for m in old:  # objects no run names still land (a protocol of its own, cpu-051)
        if m["kind"] in ("OperationSpec", "BenchmarkProtocol", "ExecutionEnvironment"):
            convert(old_digest(m))
    return [converted[d] for d in order] + runs


def _run_labels(run: dict[str, Any], environment: dict[str, Any]) -> dict[str, str]:
    labels = {**(run["metadata"].get("labels") or {}), "reexpressed_from": old_digest(run)}
    operating_system = (environment["spec"].get("software") or {}).get("os")
    return labels | ({"operating_system": operating_system[:200]} if operating_system else {})


def format_digest_of(manifest: dict[str, Any]) -> str:
    return format_digest(make_format_manifest(manifest["kind"], manifest["metadata"], manifest["spec"]))


# ---------------------------------------------------------------- reading it back


def is_controlled(run_spec: dict[str, Any]) -> bool:
    return (run_spec.get("sourceNative") or {}).get("source") == SOURCE and "cases" not in run_spec


def run_level_metrics(source: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """A run's `sourceNative.metrics` without our harness's per-case results (every sample of every
    case: ~1,300 numbers a run); another source's metrics are all its own, whatever their names."""
    if source != SOURCE:
        return metrics
    return {name: value for name, value in metrics.items() if PER_CASE_METRIC.match(name) is None}


def cases_of(run_spec: dict[str, Any], suite_spec: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A format run's per-case results in the harness's case shape ({index, axes, status,
    latencyNs, sampleCount, solScore, correctness, …}), from `sourceNative.metrics` and the
    suite's cases; [] for a run that holds none."""
    metrics = (run_spec.get("sourceNative") or {}).get("metrics") or {}
    axes = {c["externalId"]: c["axes"] for c in (suite_spec or {}).get("cases") or []}
    # `case<id>_<name>` → {id: {name: value}}, in one pass (not a pass over ~1,300 names per case)
    by_case: dict[str, dict[str, Any]] = {}
    for key, value in metrics.items():
        if key.startswith("case"):
            case_id, separator, name = key[4:].partition("_")
            if separator:
                by_case.setdefault(case_id, {})[name] = value
    out = []
    for external_id, case_axes in axes.items():
        own = by_case.get(external_id)
        if own is None or "status" not in own:
            continue
        index = int(external_id)
        case: dict[str, Any] = {"index": index, "axes": case_axes, "status": CASE_STATUS[int(own.pop("status"))]}
        latency = {s: _int(own.pop(f"latency_ns_{s}")) for s in LATENCY_STATISTICS if f"latency_ns_{s}" in own}
        if latency:
            case["latencyNs"] = latency
        if "sample_count" in own:
            case["sampleCount"] = int(own.pop("sample_count"))
        samples = sorted(
            (int(key.removeprefix("sample_")), own.pop(key)) for key in list(own) if key.startswith("sample_") and key[7:].isdigit()
        )
        if samples:
            case["samplesNs"] = [_int(value) for _, value in samples]
        for field, name in CASE_METRICS.items():
            if name in own:
                case[field] = own.pop(name) if field == "solScore" else _int(own.pop(name))
        if "correctness_rounds" in own:
            outputs: dict[str, dict[str, Any]] = {}
            for key in sorted(own):
                for suffix, field in (("_matched_ratio", "matchedRatio"), ("_max_abs_error", "maxAbsError"), ("_passed", "passed")):
                    if key.endswith(suffix):
                        outputs.setdefault(key[: -len(suffix)], {})[field] = own[key]
            case["correctness"] = {
                "rounds": int(own["correctness_rounds"]),
                "passed": case["status"] == "passed",
                "outputs": {name: {**o, "passed": bool(o.get("passed"))} for name, o in outputs.items()},
            }
        out.append(case)
    return sorted(out, key=lambda c: c["index"])


def aggregates_of(run_spec: dict[str, Any]) -> dict[str, Any]:
    """The suite-level aggregates of a format run, under the harness's names."""
    by_measure = {(m["metric"], m["statistic"], m["unit"]): m["value"] for m in run_spec.get("measurements") or []}
    out: dict[str, Any] = {}
    if (key := (PRIMARY["metric"], PRIMARY["statistic"], PRIMARY["unit"])) in by_measure:
        out["geomeanLatencyNs"] = by_measure[key]
    for field, measure in AGGREGATES.items():
        if measure in by_measure:
            out[field] = by_measure[measure]
    return out


def _int(value: float) -> int | float:
    return int(value) if isinstance(value, (int, float)) and float(value).is_integer() and math.isfinite(value) else value


__all__ = ["API_VERSION", "aggregates_of", "cases_of", "is_controlled", "reexpress", "run"]
