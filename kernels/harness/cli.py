"""`kernelindex bench 051 --impl reference,compile,ext-hybrid --out DIR [options]`

Also `python -m kernels.harness.cli 051 ...`. The gateway's CLI adds these options to its
`bench` verb (`add_arguments`) and calls `run`; torch is imported only when a benchmark runs.

--device cpu --cases small runs the reference and the harness end to end on the CPU with tiny
shapes and a wall-clock timer (a different protocol): that is what CI runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from registry.controlled_format import aggregates_of


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelindex bench", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("operation", help="operation key, e.g. 051")
    p.add_argument(
        "--impl",
        default=None,
        help="comma-separated implementation names (default: reference,compile,ext-hybrid on "
        "cuda; reference on cpu). The reference is always run: it is T_b.",
    )
    p.add_argument("--out", required=True, type=Path, help="output directory")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--cases", default=None, help="all | small | comma-separated case indices (default: all on cuda, small on cpu)")
    p.add_argument("--rounds", type=int, default=5, help="correctness rounds per case (>= 1)")
    p.add_argument("--samples", type=int, default=None, help="timed samples per case (default 50; cpu 5)")
    p.add_argument("--warmups", type=int, default=None, help="warm-ups per case (default 10; cpu 1)")
    p.add_argument("--seed", type=int, default=0)


def main(argv: list[str] | None = None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    return run(build_parser().parse_args(argv), ["bench", *argv])


def run(args: argparse.Namespace, command: list[str]) -> int:
    from kernels import implementations
    from kernels.operations import get_operation

    try:
        op = get_operation(args.operation)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    device = args.device
    default_impls = "reference,compile,ext-hybrid" if device == "cuda" else "reference"
    names = [n.strip() for n in (args.impl or default_impls).split(",") if n.strip()]
    if "reference" not in names:
        names.insert(0, "reference")
    try:
        impls = [implementations.get(n) for n in names]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    cases = args.cases or ("all" if device == "cuda" else "small")
    small = cases == "small"
    if cases == "all":
        shapes = list(op.case_shapes)
    elif cases == "small":
        shapes = list(op.small_case_shapes)
    else:
        try:
            idx = [int(c) for c in cases.split(",")]
            shapes = [op.case_shapes[i] for i in idx]
        except (ValueError, IndexError):
            print(f"error: --cases must be all, small or case indices 0..{len(op.case_shapes) - 1}", file=sys.stderr)
            return 2
        if idx != list(range(len(idx))):
            # A WorkloadSuite's cases are indexed in order; a subset is its own (ad hoc) suite.
            print("note: a subset of cases forms its own workload suite", file=sys.stderr)
    if args.rounds < 1:
        print("error: --rounds must be >= 1", file=sys.stderr)
        return 2

    from kernels.harness.protocol import Settings
    from kernels.harness.report import write_outputs
    from kernels.harness.run import run_benchmark

    settings = Settings(
        device=device,
        rounds=args.rounds,
        warmups=args.warmups if args.warmups is not None else (10 if device == "cuda" else 1),
        samples=args.samples if args.samples is not None else (50 if device == "cuda" else 5),
        seed=args.seed,
    )
    if device == "cuda" and (settings.warmups < 10 or settings.samples < 50):
        print(
            "note: the v1 protocol asks for >= 10 warm-ups and >= 50 samples; this run uses "
            f"{settings.warmups} and {settings.samples} (recorded in its protocol)",
            file=sys.stderr,
        )
    try:
        records, product = run_benchmark(op, impls, shapes, settings)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = write_outputs(args.out, op, shapes, small, settings, records, product, command)
    print(result["summary"])
    for run in result["runs"]:
        spec = run.spec.to_json()
        agg = aggregates_of(spec)
        print(
            f"{run.metadata.labels.get('implementation')}: status {spec['status']}, "
            f"geomean {agg['geomeanLatencyNs'] / 1000:.2f} us"
            + (f", mean S {agg['meanSolScore']:.3f}" if "meanSolScore" in agg else "")
            + f", faster than reference on {agg['casesFasterThanReference']}/{agg['caseCount']}"
        )
    print(f"wrote {args.out}/manifests.json, raw.json, summary.md" + (", chart.png" if (args.out / "chart.png").exists() else ""))
    failed = [r for r in result["runs"] if r.spec.to_json()["status"] != "passed"]
    missing = [n for n, rec in records.items() if rec.load_error]
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
