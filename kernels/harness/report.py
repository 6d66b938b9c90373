"""Turns a harness run into files: manifests.json (a JSON list of v1alpha1 manifests loadable
with `kernelindex load`), raw.json (every sample and round), chart.png and summary.md."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from kernels.harness import timing
from kernels.harness.correctness import COMPARATOR
from kernels.harness.gpus import sol_score
from kernels.harness.protocol import Settings
from kernels.harness.run import CaseRecord, ImplRecord
from registry import controlled_format as fmt
from registry.format import FormatManifest, format_digest, make_format_manifest
from registry.manifests import Manifest, make_manifest


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def definition_manifest(op: Any) -> Manifest:
    return make_manifest("OperationSpec", op.name, op.definition.operation_spec(), title=op.title)


def workload_manifest(op: Any, shapes: list[tuple[int, int]], definition_digest: str, small: bool) -> Manifest:
    d = op.definition
    spec: dict[str, Any] = {
        "definitionDigest": definition_digest,
        "cases": d.workload_cases(shapes),
        "aggregation": "geomean over cases of the per-case median latency",
        "correctness": {
            "comparator": COMPARATOR,
            "description": "every output in fp32 against the oracle; atol + rtol·|ref|; matched ratio",
        },
    }
    if not small:
        spec["source"] = {"source": "sol-execbench", "benchmark": d.SOL_BENCHMARK}
        name = f"kernelindex-{op.key}-cases"
        title = f"{op.key}: the 16 SOL-ExecBench case shapes (batch_size, seq_len)"
    else:
        name = f"kernelindex-{op.key}-small-cases"
        title = f"{op.key}: tiny CPU smoke shapes (B·S ≤ 64)"
    return make_manifest("WorkloadSuite", name, spec, title=title)


def _case_result(case: CaseRecord, reference: CaseRecord | None) -> dict[str, Any]:
    out: dict[str, Any] = {"index": case.index, "axes": {"batch_size": case.batch, "seq_len": case.seq}}
    if case.error or case.check is None:
        out["status"] = "failed"
    else:
        out["status"] = "passed" if case.check.passed else "incorrect"
    st = timing.stats(case.samples_ns)
    if st:
        out["latencyNs"] = st
        out["samplesNs"] = list(case.samples_ns)
    if reference is not None and reference.median_ns is not None:
        out["referenceLatencyNs"] = reference.median_ns
    if case.eager_ns:
        out["eagerLatencyNs"] = case.eager_median_ns
    if case.sol_ns is not None:
        out["solNs"] = case.sol_ns
        if st and reference is not None and reference.median_ns is not None:
            score = sol_score(st["median"], case.sol_ns, reference.median_ns)
            if score is not None:
                out["solScore"] = round(score, 6)
    if case.check is not None:
        corr: dict[str, Any] = {
            "rounds": len(case.check.rounds),
            "passed": case.check.passed,
            "outputs": {
                name: {k: (round(v, 8) if isinstance(v, float) else v) for k, v in o.items()} for name, o in case.check.per_output().items()
            },
        }
        failure = case.check.failure() or case.error
        if failure:
            corr["failure"] = failure[:2000]
        out["correctness"] = corr
    return out


def run_results(rec: ImplRecord, reference: ImplRecord | None) -> dict[str, Any] | None:
    """{status, cases, aggregates, mean}: one implementation's results over the suite, in the
    harness's terms (None when no case was measured)."""
    ref_cases = {c.index: c for c in reference.cases} if reference is not None else {}
    cases = [_case_result(c, ref_cases.get(c.index)) for c in rec.cases]
    medians = [c.get("latencyNs", {}).get("median") for c in cases]
    if not any(medians):
        return None
    geo = geomean([m for m in medians if m])
    statuses = {c["status"] for c in cases}
    status = "failed" if "failed" in statuses else ("incorrect" if "incorrect" in statuses else "passed")
    scores = [c["solScore"] for c in cases if "solScore" in c]
    faster = sum(
        1 for c in cases if c.get("latencyNs") and c.get("referenceLatencyNs") and c["latencyNs"]["median"] < c["referenceLatencyNs"]
    )
    aggregates: dict[str, Any] = {
        "geomeanLatencyNs": round(geo),
        "caseCount": len(cases),
        "casesPassed": sum(1 for c in cases if c["status"] == "passed"),
        "casesFasterThanReference": faster,
    }
    if scores:
        aggregates["meanSolScore"] = round(sum(scores) / len(scores), 6)
    sols = [c.get("solNs") for c in cases]
    if all(sols):
        aggregates["geomeanSolNs"] = round(geomean(sols))
    eag = [c.get("eagerLatencyNs") for c in cases]
    if all(eag):
        aggregates["geomeanEagerLatencyNs"] = round(geomean(eag))
    refs = [c.get("referenceLatencyNs") for c in cases]
    if all(refs):
        aggregates["geomeanReferenceLatencyNs"] = round(geomean(refs))
    mean = round(sum(m for m in medians if m) / len([m for m in medians if m]))
    return {"status": status, "cases": cases, "aggregates": aggregates, "mean": mean}


def run_manifest(
    rec: ImplRecord,
    reference: ImplRecord | None,
    *,
    digests: dict[str, str],
    suite: FormatManifest,
    observed_at: str,
    env_slug: str,
    operating_system: str | None,
    raw_samples: dict[str, str] | None = None,
) -> FormatManifest | None:
    """The v1alpha1 BenchmarkRun of one implementation (registry/controlled_format.py `run`):
    `digests` of its workload (`suite`), implementation, protocol and environment. Each case is
    named by the suite's externalId at its position (a job's subset keeps the suite's ids)."""
    results = run_results(rec, reference)
    if results is None:
        return None
    ids = [c["externalId"] for c in suite.spec.to_json()["cases"]]
    cases = [{**case, "index": int(ids[position])} for position, case in enumerate(results["cases"])]
    stamp = observed_at.replace("-", "").replace(":", "").replace(".", "").lower()
    labels = {"implementation": rec.impl.name, "operation": rec.impl.operation}
    if operating_system:
        labels["operating_system"] = operating_system[:200]
    run = fmt.run(
        name=f"{rec.impl.manifest_name()}-{env_slug}-{stamp}"[:200],
        title=f"{rec.impl.title} on {env_slug}",
        labels=labels,
        status=results["status"],
        observed_at=observed_at,
        cases=cases,
        aggregates=results["aggregates"],
        mean_ns=results["mean"],
        digests=digests,
        benchmark=suite.metadata.name,
        comparator=suite.spec.to_json()["correctness"]["comparator"],
        raw_samples=raw_samples,
    )
    return make_format_manifest(run["kind"], run["metadata"], run["spec"])


def chart(records: dict[str, ImplRecord], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return False
    any_rec = next(iter(records.values()))
    order = sorted(range(len(any_rec.cases)), key=lambda i: (any_rec.cases[i].tokens, i))
    labels = [f"#{any_rec.cases[i].index} T={any_rec.cases[i].tokens}" for i in order]
    fig, ax = plt.subplots(figsize=(12, 5.5))
    xs = list(range(len(order)))

    def geomean_ns(rec: ImplRecord) -> float:
        medians = [c.median_ns for c in rec.cases]
        return geomean(medians) if medians and all(medians) else math.inf

    # The line drawn bold: the fastest implementation that is not one of the baselines.
    ours = [name for name in records if name not in ("reference", "compile")]
    fastest = min(ours, key=lambda name: geomean_ns(records[name]), default=None)
    for name, rec in records.items():
        ys = [rec.cases[i].median_ns / 1000 if rec.cases[i].median_ns else float("nan") for i in order]
        if all(math.isnan(y) for y in ys):
            continue
        main = name == fastest
        ax.plot(
            xs,
            ys,
            marker="o",
            label=name,
            linewidth=2.6 if main else 1.4,
            zorder=5 if main else 3,
            alpha=1.0 if main or name in ("reference", "compile") else 0.6,
        )
    sols = [any_rec.cases[i].sol_ns for i in order]
    if all(sols):
        ax.plot(xs, [s / 1000 for s in sols], "k--", label="SOL bound")
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("median latency (µs, log)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def summary_markdown(records: dict[str, ImplRecord], product: str | None) -> str:
    names = list(records)
    head = "| case | B | S | T | SOL µs | " + " | ".join(f"{n} µs" for n in names) + " |"
    sep = "|" + "---|" * (5 + len(names))
    lines = [head, sep]
    any_rec = next(iter(records.values()))
    for i, c in enumerate(any_rec.cases):
        row = [str(c.index), str(c.batch), str(c.seq), str(c.tokens), f"{c.sol_ns / 1000:.2f}" if c.sol_ns else "–"]
        for n in names:
            cc = records[n].cases[i]
            mark = "" if (cc.check is not None and cc.check.passed and not cc.error) else " ✗"
            row.append(f"{cc.median_ns / 1000:.2f}{mark}" if cc.median_ns else ("✗" if cc.error else "–"))
        lines.append("| " + " | ".join(row) + " |")
    geo = ["**geomean**", "", "", "", ""]
    sols = [c.sol_ns for c in any_rec.cases]
    geo[4] = f"{geomean(sols) / 1000:.2f}" if all(sols) else "–"
    for n in names:
        g = geomean([c.median_ns for c in records[n].cases if c.median_ns])
        geo.append(f"**{g / 1000:.2f}**" if g else "–")
    lines.append("| " + " | ".join(geo) + " |")
    eager = ["eager geomean", "", "", "", ""]
    for n in names:
        g = geomean([c.eager_median_ns for c in records[n].cases if c.eager_ns])
        eager.append(f"{g / 1000:.2f}" if g else "–")
    lines.append("| " + " | ".join(eager) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(
    out_dir: Path,
    op: Any,
    shapes: list[tuple[int, int]],
    small: bool,
    settings: Settings,
    records: dict[str, ImplRecord],
    product: str | None,
    command: list[str],
) -> dict[str, Any]:
    """manifests.json (v1alpha1: the operation, suite, protocol, environment, implementations and
    one run each), raw.json (every sample and round; the runs name it by sha256), chart.png,
    summary.md."""
    from kernels.harness import format_manifests

    out_dir.mkdir(parents=True, exist_ok=True)
    observed = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    operation = format_manifests.operation(op)
    workload = format_manifests.suite(op, shapes, small)
    protocol = format_manifests.protocol(settings)
    environment, operating_system = format_manifests.environment(settings.device)
    env_slug = environment.metadata.name.removeprefix("env-")[:40]
    impl_manifests = {name: format_manifests.implementation(op, rec.impl) for name, rec in records.items()}
    objects = [operation, workload, protocol, environment, *impl_manifests.values()]

    chart_path = out_dir / "chart.png"
    timer = protocol.spec.to_json()["measurement"]["timer"]
    chart(records, chart_path, f"{op.key} {op.title} — {product or 'CPU'} (median, {timer})")

    raw = {
        "command": command,
        "observedAt": observed,
        "device": settings.device,
        "product": product,
        "settings": {
            "rounds": settings.rounds,
            "warmups": settings.warmups,
            "samples": settings.samples,
            "seed": settings.seed,
            "atol": settings.tolerance.atol,
            "rtol": settings.tolerance.rtol,
            "minMatchedRatio": settings.tolerance.min_matched_ratio,
        },
        "digests": {m.metadata.name: format_digest(m) for m in objects},
        "environment": environment.to_json()["spec"],
        "implementations": {
            name: {
                "loadError": rec.load_error,
                "seconds": round(rec.seconds, 3),
                "cases": [
                    {
                        "index": c.index,
                        "batch_size": c.batch,
                        "seq_len": c.seq,
                        "tokens": c.tokens,
                        "flops": c.flops,
                        "minBytes": c.min_bytes,
                        "solNs": c.sol_ns,
                        "samplesNs": c.samples_ns,
                        "eagerNs": c.eager_ns,
                        "error": c.error,
                        "rounds": [
                            {
                                "round": r.round,
                                "seed": r.seed,
                                "passed": r.passed,
                                "failure": r.failure,
                                "outputs": {
                                    o.name: {"matchedRatio": o.matched_ratio, "maxAbsError": o.max_abs_error, "passed": o.passed}
                                    for o in r.outputs
                                },
                            }
                            for r in (c.check.rounds if c.check else [])
                        ],
                    }
                    for c in rec.cases
                ],
            }
            for name, rec in records.items()
        },
    }
    raw_path = out_dir / "raw.json"
    raw_path.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n")
    raw_samples = {"uri": "raw.json", "digest": "sha256:" + hashlib.sha256(raw_path.read_bytes()).hexdigest()}

    reference = records.get("reference")
    runs = []
    for name, rec in records.items():
        m = run_manifest(
            rec,
            reference,
            digests={
                "workload": format_digest(workload),
                "implementation": format_digest(impl_manifests[name]),
                "protocol": format_digest(protocol),
                "environment": format_digest(environment),
            },
            suite=workload,
            observed_at=observed,
            env_slug=env_slug,
            operating_system=operating_system,
            raw_samples=raw_samples,
        )
        if m is not None:
            runs.append(m)

    manifests = [*objects, *runs]
    (out_dir / "manifests.json").write_text(json.dumps([m.to_json() for m in manifests], indent=1, ensure_ascii=False) + "\n")
    summary = summary_markdown(records, product)
    (out_dir / "summary.md").write_text(summary)
    return {"manifests": manifests, "runs": runs, "summary": summary}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
