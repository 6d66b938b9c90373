"""Turn parsed KernelBot rows into KernelIndex manifests (pure: same rows → same digests).

| source                                  | manifest                                              |
|-----------------------------------------|-------------------------------------------------------|
| board (config `leaderboards`)           | OperationSpec `gpumode-{name}`: our own summary        |
| the cases' `spec` of a per-shape board  | WorkloadSuite `gpumode-{name}-cases-{hash}`            |
| a flat board                            | WorkloadSuite `gpumode-{name}-score`: one aggregate    |
| kind of board (per-shape / flat)        | BenchmarkProtocol: KernelBot's harness + ranking rule  |
| GPU                                     | ExecutionEnvironment `gpumode-{gpu}`                   |
| a user's best submission, board × GPU   | ImplementationRevision + BenchmarkRun                  |

Decisions (also in README.md):
- Only passing leaderboard-mode runs rank on KernelBot: a per-shape row with another `run_mode`
  or `run_passed: false`, and a flat row whose status is a failure or that has no score, is
  skipped with the reason.
- One run per (board, user, GPU): the user's best passing submission there — lowest geometric
  mean of per-case means (per-shape) or lowest score (flat); equal values go to the earlier
  submission, then the lower id. Its externalId is `{board}/{user}/{gpu}`, so a better
  submission later supersedes the run.
- Times: per-case statistics are ns as published, rounded half-even to integer ns; flat scores
  are seconds (the dataset card: "Scores are execution time in seconds"), kept verbatim in
  `sourceNative.metrics.score` and as integer ns in `latencyNs.score`.
- A board missing from the `leaderboards` config (it is stale for some boards) is built from
  what its rows say (per-shape: `leaderboard-{id}`; flat: `problem_name`) and marked unlisted.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from functools import cache

from loaders.common.source_records import code_fingerprint
from loaders.common.source_records import record_fingerprint as record_fingerprint_of
from loaders.gpumode import SOURCE
from loaders.gpumode.parse import Case, ParseError, PerShapeRow, Submission
from registry.digest import manifest_digest
from registry.manifests import Manifest, RunStatus, make_manifest
from registry.ranking import GEOMEAN, GPUMODE_FAMILY

HARNESS = "GPU MODE KernelBot"
COMPARATOR = "kernelbot_check"
PER_SHAPE, FLAT = "per-shape", "flat"
DATASET_URL = "https://huggingface.co/datasets/GPUMODE/kernelbot-data"
PROTOCOL_NOTES = {
    PER_SHAPE: (
        "KernelBot leaderboard mode: each benchmark case is timed `runs` times (mean, std, err, best, "
        "worst in ns); a submission ranks by the geometric mean of its per-case means, lower is better. "
        "Ties: overlapping 95% confidence intervals of that geometric mean (registry/ranking.py)."
    ),
    FLAT: (
        "KernelBot export with one aggregate score (execution time in seconds) per submission and no "
        "per-case statistics; ranks by the score, lower is better, equal scores tie."
    ),
}
PASSING = {"success", "succeeded", "passed", "pass", "ok", "completed"}
FAILING = {"failed", "failure", "fail", "error", "timeout", "timed_out", "crashed"}
# GPU as the source names it (a run's system info or a board's gpu_types) → manifest hardware.
GPUS = (
    ("MI355X", ("amd", "AMD Instinct MI355X", "gfx950")),
    ("MI325X", ("amd", "AMD Instinct MI325X", "gfx942")),
    ("MI300X?", ("amd", "AMD Instinct MI300X", "gfx942")),
    ("GB200", ("nvidia", "NVIDIA GB200", "sm_100")),
    ("B200", ("nvidia", "NVIDIA B200", "sm_100")),
    ("H200", ("nvidia", "NVIDIA H200", "sm_90")),
    ("H100", ("nvidia", "NVIDIA H100", "sm_90")),
    ("A100", ("nvidia", "NVIDIA A100", "sm_80")),
    ("L4", ("nvidia", "NVIDIA L4", "sm_89")),
    ("T4", ("nvidia", "NVIDIA T4", "sm_75")),
)


class Rejected(ValueError):
    """The row is wrong or inconsistent: reported as rejected."""


class Skipped(ValueError):
    """The row is fine but does not rank (failed, not leaderboard mode): reported as skipped."""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")[:120] or "unnamed"


def ns(value: float) -> int:
    return int(Decimal(repr(value)).to_integral_value(ROUND_HALF_EVEN))


def observed_at(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


# ---------------------------------------------------------------- boards


@dataclass(frozen=True)
class Board:
    id: int | None
    name: str
    deadline: datetime | None = None
    description: str | None = None
    gpu_types: tuple[str, ...] = ()
    listed: bool = True  # False: not in the `leaderboards` config, built from its rows

    @property
    def key(self) -> str:
        return str(self.id) if self.id is not None else self.name


def first_sentence(description: str | None, limit: int = 160) -> str | None:
    """The first prose sentence of a board's description (code blocks and code-like lines left
    out), cut at `limit` characters: enough to say what the board is, not the source's text."""
    if not description:
        return None
    prose, in_code = [], False
    for line in description.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            continue
        if in_code or not stripped or re.match(r"^(def |class |import |from |#|>>>|[\w.]+\(.*\)\s*$)", stripped):
            if prose:
                break
            continue
        prose.append(stripped)
    text = " ".join(prose)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    text = match.group(1) if match else text
    return (text[: limit - 1].rstrip() + "…") if len(text) > limit else (text or None)


@cache
def definition_for(board: Board) -> tuple[Manifest, str]:
    parts = [f"GPU MODE KernelBot leaderboard '{board.name}'" + (f" (board {board.id})" if board.id is not None else "") + "."]
    if board.gpu_types:
        parts.append(f"GPUs: {', '.join(board.gpu_types)}.")
    if board.deadline:
        parts.append(f"Deadline {board.deadline.date().isoformat()}.")
    sentence = first_sentence(board.description)
    if sentence:
        parts.append(f"The board's description begins: “{sentence}”")
    if not board.listed:
        parts.append("Not listed in the dataset's leaderboards config; named from its rows.")
    reference = {"source": SOURCE, "benchmark": board.name, "url": DATASET_URL}
    if board.id is not None:
        reference["externalId"] = f"leaderboard/{board.id}"
    manifest = make_manifest(
        "OperationSpec",
        f"gpumode-{slug(board.name)}",
        {
            "name": board.name,
            "description": " ".join(parts),
            "axes": {},
            "inputs": {},
            "outputs": {},
            "tags": ["gpumode", "kernelbot"],
            "reference": reference,
        },
        title=f"GPU MODE · {board.name}",
    )
    return manifest, manifest_digest(manifest)


@cache
def workload_for(board: Board, specs: tuple[str, ...] | None) -> tuple[Manifest, str]:
    """The suite of a per-shape board's cases (one suite per distinct list of specs: a board
    whose cases changed is a new workload), or a flat board's single aggregate case."""
    definition, definition_digest = definition_for(board)
    source = {"source": SOURCE, "benchmark": board.name}
    if specs is None:
        cases = [{"index": 0, "axes": {}, "sourceNative": {"aggregate": "score over the board's benchmark shapes"}}]
        name, aggregation, title = (
            f"gpumode-{slug(board.name)}-score",
            "submission score (seconds, as published)",
            f"{board.name} · aggregate score",
        )
    else:
        from loaders.gpumode.parse import parse_spec

        cases = [{"index": i, "axes": parse_spec(spec), "sourceNative": {"spec": spec}} for i, spec in enumerate(specs)]
        tag = hashlib.sha256("\n".join(specs).encode()).hexdigest()[:8]
        name, aggregation, title = (
            f"gpumode-{slug(board.name)}-cases-{tag}",
            "geometric mean of per-case means",
            f"{board.name} · {len(specs)} cases",
        )
    manifest = make_manifest(
        "WorkloadSuite",
        name,
        {
            "definitionDigest": definition_digest,
            "cases": cases,
            "aggregation": aggregation,
            "correctness": {
                "comparator": COMPARATOR,
                "description": "KernelBot checks the output against the board's reference on its test cases.",
            },
            "source": source,
        },
        title=title,
    )
    return manifest, manifest_digest(manifest)


@cache
def protocol_for(kind: str) -> tuple[Manifest, str]:
    manifest = make_manifest(
        "BenchmarkProtocol",
        f"gpumode-kernelbot-{kind}",
        {
            "harness": {"name": HARNESS, "version": "leaderboard"},
            "correctness": {"reference": "the board's reference implementation", "comparator": COMPARATOR},
            "measurement": {"timer": "harness_reported", "primaryStatistic": GEOMEAN if kind == PER_SHAPE else "score"},
            "comparability": {"family": GPUMODE_FAMILY, "version": kind, "notes": PROTOCOL_NOTES[kind]},
        },
        title=f"{HARNESS} leaderboard ({kind})",
    )
    return manifest, manifest_digest(manifest)


def hardware_of(gpu: str) -> tuple[str, str, str]:
    upper = gpu.upper()
    for pattern, hardware in GPUS:
        if re.search(rf"(?<![A-Z0-9]){pattern}(?![A-Z0-9])", upper):
            return hardware
    raise Rejected(f"GPU {gpu!r} is not a GPU we know the architecture of")


@cache
def environment_for(product: str) -> tuple[Manifest, str]:
    vendor, product, architecture = next(h for _, h in GPUS if h[1] == product)
    manifest = make_manifest(
        "ExecutionEnvironment",
        f"gpumode-{slug(product)}",
        {"hardware": {"vendor": vendor, "product": product, "architecture": architecture}},
        title=f"GPU MODE KernelBot runner, {product}",
    )
    return manifest, manifest_digest(manifest)


# ---------------------------------------------------------------- submissions


@dataclass
class Candidate:
    """A passing leaderboard submission; the best per (board, user, GPU) becomes a run."""

    board: Board
    submission: Submission
    product: str  # the GPU, as our hardware product name
    value: float  # ns: geomean of per-case means, or the flat score
    cases: list[Case] = field(default_factory=list)
    config: str = ""
    snapshot_digest: str | None = None
    row: dict | None = None  # the source row as read, for its fingerprint

    @property
    def user_key(self) -> str:
        s = self.submission
        return s.user_id if s.user_id is not None else s.user_name

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.board.key, self.user_key, self.product)

    def order(self) -> tuple:
        when = self.submission.submission_time or datetime.max.replace(tzinfo=UTC)
        return (self.value, when, self.submission.submission_id)


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def candidate_for(
    submission: Submission, board: Board, *, config: str = "", snapshot_digest: str | None = None, row: dict | None = None
) -> Candidate:
    """Raises Skipped (does not rank) or Rejected (inconsistent)."""
    if isinstance(submission, PerShapeRow):
        if submission.run_mode != "leaderboard":
            raise Skipped(f"run_mode {submission.run_mode!r}: only leaderboard-mode runs rank")
        if not submission.run_passed:
            raise Skipped("run did not pass (run_passed is false)")
        try:
            cases = submission.cases()
        except ParseError as error:  # a drifted run_result
            raise Rejected(str(error)) from None
        if any(case.mean <= 0 for case in cases):
            raise Rejected("run_result: a case mean is 0: no geometric mean")
        product = hardware_of(submission.run_system_info.gpu)[1]
        return Candidate(board, submission, product, geometric_mean([c.mean for c in cases]), cases, config, snapshot_digest, row)
    status = (submission.status or "").strip().lower()
    if status in FAILING:
        raise Skipped(f"status {submission.status!r}: a failed submission does not rank")
    if status and status not in PASSING:
        raise Rejected(f"unknown status {submission.status!r}")
    if submission.score is None:
        raise Skipped("no score: a run needs a value for its primary statistic")
    if not math.isfinite(submission.score) or submission.score <= 0:
        raise Rejected(f"score is not a positive time ({submission.score!r})")
    gpu = submission.gpu_type
    if gpu is None:
        if len(board.gpu_types) != 1:
            raise Rejected(f"no gpu_type, and board {board.name!r} lists {len(board.gpu_types)} GPUs")
        gpu = board.gpu_types[0]
    product = hardware_of(gpu)[1]
    return Candidate(board, submission, product, submission.score * 1e9, [], config, snapshot_digest, row)


def external_id_of(best: Candidate) -> str:
    return f"{best.board.key}/{best.user_key}/{slug(best.product)}"


def record_fingerprint(best: Candidate) -> str:
    """The fingerprint of this loader's code, the board, the config and the chosen row: equal
    fingerprints make equal runs, so a current run with this fingerprint is unchanged without
    rebuilding it (loaders/common/source_records.py)."""
    from loaders.gpumode import normalize, parse

    return record_fingerprint_of(code_fingerprint(normalize, parse), best.config, repr(best.board), best.row)


@dataclass(frozen=True)
class RunManifests:
    external_id: str
    run: Manifest
    definition: Manifest
    workload: Manifest
    implementation: Manifest
    protocol: Manifest
    environment: Manifest
    source_record: str | None = None  # record_fingerprint, kept beside the run (not in it)


def run_for(best: Candidate, fingerprint: str | None = None) -> RunManifests:
    """The ImplementationRevision and BenchmarkRun of a user's best submission; `fingerprint`
    (`record_fingerprint`) goes with them to be kept on the run's document."""
    s, board = best.submission, best.board
    per_shape = isinstance(s, PerShapeRow)
    kind = PER_SHAPE if per_shape else FLAT
    definition, definition_digest = definition_for(board)
    workload, workload_digest = workload_for(board, tuple(c.spec for c in best.cases) if per_shape else None)
    protocol, protocol_digest = protocol_for(kind)
    environment, environment_digest = environment_for(best.product)
    user = s.user_name or f"user {s.user_id}"
    external_id = external_id_of(best)
    metrics: dict = {"submission_id": s.submission_id, "config": best.config, "user_id": s.user_id}
    if per_shape:
        statistic = GEOMEAN
        metrics |= {
            "run_id": s.run_id,
            "code_id": s.code_id,
            "run_score": s.run_score,
            "run_mode": s.run_mode,
            "gpu": s.run_system_info.gpu,
            "torch": s.run_system_info.torch,
            "platform": s.run_system_info.platform,
        }
        cases = [
            {
                "index": c.index,
                "axes": c.axes,
                "status": RunStatus.passed.value,
                "latencyNs": {
                    name: ns(value)
                    for name, value in (("mean", c.mean), ("std", c.std), ("err", c.err), ("best", c.best), ("worst", c.worst))
                    if value is not None
                },
                **({"sampleCount": c.runs} if c.runs else {}),
            }
            for c in best.cases
        ]
    else:
        statistic = "score"
        metrics |= {"score": s.score, "status": s.status, "problem_name": s.problem_name, "gpu_type": s.gpu_type}
        cases = []
    annotations = {"sourceSnapshot": best.snapshot_digest} if best.snapshot_digest else {}
    if s.submission_time is None:
        raise Rejected("no submission_time: the run has no time the source vouches for")
    try:
        implementation = make_manifest(
            "ImplementationRevision",
            f"gpumode-submission-{s.submission_id}",
            {
                "name": user,
                "project": user,
                "revision": f"submission-{s.submission_id}",
                "definitionDigest": definition_digest,
                "source": {"source": SOURCE, "benchmark": board.name, "externalId": f"submission/{s.submission_id}"},
            },
            title=f"{user} · submission {s.submission_id}",
        )
        run = make_manifest(
            "BenchmarkRun",
            f"gpumode-{slug(board.name)}-{slug(best.user_key)}-{slug(best.product)}",
            {
                "status": RunStatus.passed.value,
                "timing": {"primaryStatistic": statistic, "latencyNs": {statistic: ns(best.value)}},
                "observedAt": observed_at(s.submission_time),
                "sourceNative": {
                    "source": SOURCE,
                    "benchmark": board.name,
                    "externalId": external_id,
                    "metrics": {k: v for k, v in metrics.items() if v is not None},
                },
                "protocolDigest": protocol_digest,
                "workloadDigest": workload_digest,
                "environmentDigest": environment_digest,
                "implementationDigest": manifest_digest(implementation),
                "cases": cases,
            },
            title=f"{user} · {board.name} · {best.product.removeprefix('NVIDIA ').removeprefix('AMD Instinct ')}",
            annotations=annotations,
        )
    except ValueError as error:
        raise Rejected(f"does not make a valid manifest: {error}") from None
    return RunManifests(external_id, run, definition, workload, implementation, protocol, environment, fingerprint)
