"""Turn parsed KernelBot rows into KernelIndex manifests (pure: same rows → same digests).

| source                                  | manifest                                              |
|-----------------------------------------|-------------------------------------------------------|
| board (config `leaderboards`)           | OperationSpec `gpumode-{name}`: our own summary        |
| the cases' `spec` of a per-shape board  | WorkloadSuite `gpumode-{name}-cases-{hash}`            |
| a flat board                            | WorkloadSuite `gpumode-{name}-score`: one aggregate    |
| kind of board (per-shape / flat)        | BenchmarkProtocol: KernelBot's harness + ranking rule  |
| GPU                                     | ExecutionEnvironment `gpumode-{gpu}`                   |
| a user's best submission, board × GPU   | ImplementationRevision + BenchmarkRun                  |

Decisions (also in README.md, with the source of each field):
- Only what KernelBot would rank ranks: a per-shape row with another `run_mode` or `run_passed:
  false`, a flat row whose `status` is not `succeeded` (failed, hacked, timed_out: never ranked;
  pending, running, active: unfinished), is skipped with the reason. A row that contradicts the
  export's own rules (a succeeded row with no score or runner, an unknown status, a run_score
  that is none of KernelBot's scores of its cases) is rejected, naming the field.
- The environment is the runner (flat rows: `runner`, every name of KernelBot's consts.py; its
  own environment each, `formFactor: runner:{name}`, so B200_Nebius is not Modal's B200) or the
  GPU the run reported (per-shape rows: `run_system_info.gpu` and `device_count`).
- One run per (board, user, environment): the user's best submission there by the board's own
  score rule — per-shape boards: KernelBot's `ranking_by` (geom, mean or last of the case means,
  submission.compute_score), told from the rows' `run_score`; flat boards: `score` — equal
  values go to the earlier submission, then the lower id. Its externalId is `{board}/{user}/
  {environment}`, so a better submission later supersedes the run.
- Times: per-case statistics are ns as published, rounded half-even to integer ns; scores are
  seconds (docs.md: "scores are execution time in seconds"), kept verbatim in
  `sourceNative.metrics` and as integer ns in `latencyNs`.
- A case's `seed` (examples/eval.py) is the case's seed, kept with its spec, not an axis.
- A board missing from the `leaderboards` config (it is stale for some boards) is built from
  what its rows say (`leaderboard-{id}` / `problem_name`) and marked unlisted.
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
from loaders.gpumode.parse import Case, ParseError, PerShapeRow, Submission, parse_spec, spec_seed
from registry.digest import manifest_digest
from registry.manifests import Manifest, RunStatus, make_manifest
from registry.ranking import GPUMODE_FAMILY

HARNESS = "GPU MODE KernelBot"
COMPARATOR = "kernelbot_check"
PER_SHAPE, FLAT = "per-shape", "flat"
DATASET_URL = "https://huggingface.co/datasets/GPUMODE/kernelbot-data"
PROTOCOL_NOTES = {
    PER_SHAPE: (
        "KernelBot leaderboard mode: each benchmark case is timed `runs` times (mean, std, err, best, "
        "worst in ns); a submission ranks by the board's own score rule, {rule}, lower is better. "
        "Ties: overlapping 95% confidence intervals of that score (registry/ranking.py)."
    ),
    FLAT: (
        "KernelBot export with one aggregate score (execution time in seconds) per submission and no "
        "per-case statistics; ranks by the score, lower is better, equal scores tie."
    ),
}
# sql/get_hf_export_rows.sql writes `succeeded` for a finished run that scored and passed; else
# the job's status (background_submission_manager.py: failed, timed_out, hacked) or, unfinished,
# the job's or the submission's (pending, running; the column's default `active`).
SUCCEEDED = "succeeded"
NEVER_RANKED = {
    "failed": "did not pass KernelBot's checks",
    "timed_out": "hit KernelBot's hard timeout",
    "hacked": "flagged by KernelBot's kernel guard as a hack",
}
UNFINISHED = ("pending", "running", "active")
STATUSES = (SUCCEEDED, *NEVER_RANKED, *UNFINISHED)

# KernelBot's RankCriterion (consts.py) as our statistic names: the board's score of a submission
# is the geometric mean, the mean, or the last of its case means (submission.compute_score).
RULES = {"geom": "geomean", "mean": "mean", "last": "last"}
RULE_TEXT = {
    "geomean": "the geometric mean of its per-case means",
    "mean": "the arithmetic mean of its per-case means",
    "last": "the mean of its last (only) case",
}
RULE_TOLERANCE = 1e-4  # relative: eval.cu logs means with 6 significant digits


@dataclass(frozen=True)
class Hardware:
    vendor: str
    product: str
    architecture: str


# GPU as a run reports it (run_system_info.gpu: torch.cuda.get_device_name()) → hardware.
GPUS = (
    ("MI355X", Hardware("amd", "AMD Instinct MI355X", "gfx950")),
    ("MI325X", Hardware("amd", "AMD Instinct MI325X", "gfx942")),
    ("MI300X?", Hardware("amd", "AMD Instinct MI300X", "gfx942")),
    ("MI250X?", Hardware("amd", "AMD Instinct MI250", "gfx90a")),
    ("GB200", Hardware("nvidia", "NVIDIA GB200", "sm_100")),
    ("B200", Hardware("nvidia", "NVIDIA B200", "sm_100")),
    ("H200", Hardware("nvidia", "NVIDIA H200", "sm_90")),
    ("H100", Hardware("nvidia", "NVIDIA H100", "sm_90")),
    ("A100", Hardware("nvidia", "NVIDIA A100", "sm_80")),
    ("L4", Hardware("nvidia", "NVIDIA L4", "sm_89")),
    ("T4", Hardware("nvidia", "NVIDIA T4", "sm_75")),
)
_B200 = Hardware("nvidia", "NVIDIA B200", "sm_100")
_MI300X = Hardware("amd", "AMD Instinct MI300X", "gfx942")
# Every runner of KernelBot's consts.py (GitHubGPU, ModalGPU) → (hardware, GPUs, what it is).
RUNNERS = {
    # GitHub runners
    "NVIDIA": (_B200, 1, "KernelBot's GitHub NVIDIA runner (the NVFP4 Blackwell competition's B200)"),
    "B200_Nebius": (_B200, 1, "a B200 on a Nebius host, KernelBot's GitHub runner B200_Nebius (Helion problems)"),
    "MI300": (_MI300X, 1, "KernelBot's GitHub AMD MI300 runner"),
    "MI250": (Hardware("amd", "AMD Instinct MI250", "gfx90a"), 1, "KernelBot's GitHub AMD MI250 runner"),
    "MI300x8": (_MI300X, 8, "KernelBot's GitHub runner with 8 AMD MI300X"),
    "MI355X": (Hardware("amd", "AMD Instinct MI355X", "gfx950"), 1, "KernelBot's GitHub AMD MI355X runner"),
    # Modal runners
    "T4": (Hardware("nvidia", "NVIDIA T4", "sm_75"), 1, "KernelBot's Modal T4 runner"),
    "L4": (Hardware("nvidia", "NVIDIA L4", "sm_89"), 1, "KernelBot's Modal L4 runner"),
    "A100": (Hardware("nvidia", "NVIDIA A100", "sm_80"), 1, "KernelBot's Modal A100 runner"),
    "H100": (Hardware("nvidia", "NVIDIA H100", "sm_90"), 1, "KernelBot's Modal H100 runner"),
    "B200": (_B200, 1, "KernelBot's Modal B200 runner"),
    "L4x4": (Hardware("nvidia", "NVIDIA L4", "sm_89"), 4, "KernelBot's Modal runner with 4 L4"),
}


@dataclass(frozen=True)
class Environment:
    """Where a run ran: a KernelBot runner (flat rows) or the GPU a run reported (per-shape)."""

    key: str  # in external ids and names: the runner's name, or the GPU product's slug
    hardware: Hardware
    count: int = 1
    runner: str | None = None
    about: str | None = None

    @property
    def label(self) -> str:
        return self.runner or (self.hardware.product + (f" ×{self.count}" if self.count > 1 else ""))


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
        cases = []
        for i, spec in enumerate(specs):
            seed = spec_seed(spec)
            native = {"spec": spec} | ({"seed": seed} if seed is not None else {})
            cases.append({"index": i, "axes": parse_spec(spec), "sourceNative": native})
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
def protocol_for(kind: str, rule: str | None = None) -> tuple[Manifest, str]:
    """KernelBot's harness and a board's score rule: per-shape boards rank by `rule` (geomean,
    mean or last of the case means), flat ones by their score."""
    statistic = rule if kind == PER_SHAPE else "score"
    manifest = make_manifest(
        "BenchmarkProtocol",
        f"gpumode-kernelbot-{kind}" + (f"-{rule}" if kind == PER_SHAPE else ""),
        {
            "harness": {"name": HARNESS, "version": "leaderboard"},
            "correctness": {"reference": "the board's reference implementation", "comparator": COMPARATOR},
            "measurement": {"timer": "harness_reported", "primaryStatistic": statistic},
            "comparability": {
                "family": GPUMODE_FAMILY,
                "version": f"{kind}-{rule}" if kind == PER_SHAPE else kind,
                "notes": PROTOCOL_NOTES[kind].format(rule=RULE_TEXT.get(rule, "")),
            },
        },
        title=f"{HARNESS} leaderboard ({kind}" + (f", {rule})" if kind == PER_SHAPE else ")"),
    )
    return manifest, manifest_digest(manifest)


def hardware_of(gpu: str) -> Hardware:
    upper = gpu.upper()
    for pattern, hardware in GPUS:
        if re.search(rf"(?<![A-Z0-9]){pattern}(?![A-Z0-9])", upper):
            return hardware
    raise Rejected(f"run_system_info.gpu: {gpu!r} is not a GPU we know the architecture of")


def runner_environment(runner: str | None) -> Environment:
    if runner is None or not runner.strip():
        raise Rejected("runner: missing on a succeeded row (the export names the runner of every scored run)")
    known = RUNNERS.get(runner.strip())
    if known is None:
        raise Rejected(f"runner: {runner!r} is none of KernelBot's runners ({', '.join(RUNNERS)})")
    hardware, count, about = known
    return Environment(slug(runner.strip()).replace("_", "-"), hardware, count, runner.strip(), about)


def reported_environment(info) -> Environment:
    if not info.gpu.strip():
        raise Rejected("run_system_info.gpu: empty (KernelBot found no GPU)")
    hardware = hardware_of(info.gpu)
    count = info.device_count if info.device_count and info.device_count > 1 else 1
    key = slug(hardware.product) + (f"-x{count}" if count > 1 else "")
    return Environment(key, hardware, count, None, f"as the run reported it: {info.gpu}")


@cache
def environment_for(env: Environment) -> tuple[Manifest, str]:
    hardware = {"vendor": env.hardware.vendor, "product": env.hardware.product, "architecture": env.hardware.architecture}
    if env.count > 1:
        hardware["count"] = env.count
    if env.runner:
        hardware["formFactor"] = f"runner:{env.runner}"  # a runner is its own environment
    manifest = make_manifest(
        "ExecutionEnvironment",
        f"gpumode-kernelbot-{env.key}",
        {"hardware": hardware},
        title=f"KernelBot runner {env.runner} · {env.hardware.product}" if env.runner else f"KernelBot · {env.label}",
        annotations={"about": env.about} if env.about else {},
    )
    return manifest, manifest_digest(manifest)


# ---------------------------------------------------------------- submissions


@dataclass
class Candidate:
    """A submission KernelBot would rank; the best per (board, user, environment) becomes a run.
    `values`: its score under each rule its row is consistent with (per-shape: some of geomean,
    mean, last; flat: score), in ns."""

    board: Board
    submission: Submission
    environment: Environment
    values: dict[str, float]
    cases: list[Case] = field(default_factory=list)
    config: str = ""
    snapshot_digest: str | None = None
    row: dict | None = None  # the source row as read, for its fingerprint
    rule: str | None = None  # set once the board's rule is known

    @property
    def per_shape(self) -> bool:
        return isinstance(self.submission, PerShapeRow)

    @property
    def user_key(self) -> str:
        s = self.submission
        return s.user_id if s.user_id is not None else s.user_name

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.board.key, self.user_key, self.environment.key)

    @property
    def value(self) -> float:
        return self.values[self.rule or next(iter(self.values))]

    def order(self, rule: str) -> tuple:
        when = self.submission.submission_time or datetime.max.replace(tzinfo=UTC)
        return (self.values[rule], when, self.submission.submission_id)


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def rule_values(cases: list[Case]) -> dict[str, float]:
    """KernelBot's score of a run under each of its rules (submission.compute_score), in ns;
    `last` only for one case (a `last` board's leaderboard run times only its last benchmark)."""
    means = [c.mean for c in cases]
    if len(means) == 1:
        return {"geomean": means[0], "mean": means[0], "last": means[0]}
    return {"geomean": geometric_mean(means), "mean": sum(means) / len(means)}


def candidate_for(
    submission: Submission, board: Board, *, config: str = "", snapshot_digest: str | None = None, row: dict | None = None
) -> Candidate:
    """Raises Skipped (KernelBot would not rank it) or Rejected (the row contradicts the export)."""
    if isinstance(submission, PerShapeRow):
        if submission.run_mode != "leaderboard":
            raise Skipped(f"run_mode {submission.run_mode!r}: only leaderboard-mode runs rank")
        if not submission.run_passed:
            raise Skipped("run_passed is false: a run that did not pass never ranks")
        try:
            cases = submission.cases()
        except ParseError as error:  # a drifted run_result
            raise Rejected(str(error)) from None
        if any(case.mean <= 0 for case in cases):
            raise Rejected("run_result: a case mean is 0: no score")
        environment = reported_environment(submission.run_system_info)
        if submission.run_score is None:
            raise Rejected("run_score: missing on a passing leaderboard run (KernelBot scores every one)")
        score = submission.run_score * 1e9
        values = {r: v for r, v in rule_values(cases).items() if abs(v - score) <= RULE_TOLERANCE * score}
        if not values:
            told = ", ".join(f"{r} {v / 1e9:.6g} s" for r, v in rule_values(cases).items())
            raise Rejected(f"run_score: {submission.run_score!r} s is none of KernelBot's scores of the case means ({told})")
        return Candidate(board, submission, environment, values, cases, config, snapshot_digest, row)
    status = (submission.status or "").strip()
    if status in NEVER_RANKED:
        raise Skipped(f"status {status!r}: {NEVER_RANKED[status]}; never ranked")
    if status in UNFINISHED:
        raise Skipped(f"status {status!r}: unfinished when exported")
    if status != SUCCEEDED:
        raise Rejected(f"status: {submission.status!r} is none of KernelBot's ({', '.join(STATUSES)})")
    if submission.mode is not None and submission.mode != "leaderboard":
        raise Rejected(f"mode: {submission.mode!r} on a succeeded row (the export joins leaderboard runs only)")
    if submission.passed is False:
        raise Rejected("passed: false on a succeeded row")
    if submission.score is None:
        raise Rejected("score: missing on a succeeded row")
    if not math.isfinite(submission.score) or submission.score <= 0:
        raise Rejected(f"score: {submission.score!r} is not a positive time")
    environment = runner_environment(submission.runner)
    return Candidate(board, submission, environment, {"score": submission.score * 1e9}, [], config, snapshot_digest, row)


def external_id_of(best: Candidate) -> str:
    return f"{best.board.key}/{best.user_key}/{best.environment.key}"


def record_fingerprint(best: Candidate) -> str:
    """The fingerprint of this loader's code, the board, the config and the chosen row: equal
    fingerprints make equal runs, so a current run with this fingerprint is unchanged without
    rebuilding it (loaders/common/source_records.py)."""
    from loaders.gpumode import catalog_identity, normalize, parse

    code = code_fingerprint(normalize, parse, catalog_identity) + catalog_identity.PROBLEMS_FILE.read_bytes()
    return record_fingerprint_of(code, best.config, repr(best.board), best.row)


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
    per_shape = best.per_shape
    kind = PER_SHAPE if per_shape else FLAT
    rule = best.rule if per_shape else None
    if per_shape and rule is None:
        raise ValueError("the board's score rule is decided before its runs are built")
    definition, definition_digest = definition_for(board)
    workload, workload_digest = workload_for(board, tuple(c.spec for c in best.cases) if per_shape else None)
    protocol, protocol_digest = protocol_for(kind, rule)
    environment, environment_digest = environment_for(best.environment)
    user = s.user_name or f"user {s.user_id}"
    external_id = external_id_of(best)
    metrics: dict = {"submission_id": s.submission_id, "config": best.config, "user_id": s.user_id, "code_id": s.code_id}
    if per_shape:
        statistic = rule
        metrics |= {
            "run_id": s.run_id,
            "run_score": s.run_score,
            "run_mode": s.run_mode,
            "gpu": s.run_system_info.gpu,
            "device_count": s.run_system_info.device_count,
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
        metrics |= {"score": s.score, "status": s.status, "problem_name": s.problem_name, "runner": s.runner, "mode": s.mode}
        cases = []
    annotations = {"sourceSnapshot": best.snapshot_digest} if best.snapshot_digest else {}
    if s.submission_time is None:
        raise Rejected("submission_time: missing: the run has no time the source vouches for")
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
            f"gpumode-{slug(board.name)}-{slug(best.user_key)}-{best.environment.key}",
            {
                "status": RunStatus.passed.value,
                "timing": {"primaryStatistic": statistic, "latencyNs": {statistic: ns(best.values[rule or "score"])}},
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
            title=f"{user} · {board.name} · {best.environment.label.removeprefix('NVIDIA ').removeprefix('AMD Instinct ')}",
            annotations=annotations,
        )
    except ValueError as error:
        raise Rejected(f"does not make a valid manifest: {error}") from None
    return RunManifests(external_id, run, definition, workload, implementation, protocol, environment, fingerprint)
