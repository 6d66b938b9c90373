"""`kernelindex jobs claim` and `kernelindex submit-result`: the API side of an offline runner
(claim on a host that reaches the API, run elsewhere with `kernelindex runner --job`, submit)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gateway.cli.common import add_api_options, api_key, fail
from gateway.settings import Settings
from kernels.runner.client import LEASE_SECONDS, RegistryClient


def register(sub) -> None:
    jobs_parser = sub.add_parser("jobs", help="benchmark jobs over the API")
    jobs_sub = jobs_parser.add_subparsers(dest="jobs_command", required=True, metavar="{claim}")
    claim = jobs_sub.add_parser("claim", help="claim a job for an offline runner; writes its job document")
    add_api_options(claim, "the runner's API key")
    claim.add_argument("--gpu", required=True, help='GPU product, e.g. "NVIDIA H200"')
    claim.add_argument("--lease", type=int, default=LEASE_SECONDS, help=f"lease to ask for, in seconds (default {LEASE_SECONDS})")
    claim.add_argument("--out", required=True, type=Path, help="where to write the job document")
    claim.set_defaults(handler=cmd_claim)

    submit = sub.add_parser("submit-result", help="post an offline runner's signed result (or its failure)")
    submit.add_argument("file", type=Path, metavar="FILE", help="what `kernelindex runner --job ... --out FILE` wrote")
    add_api_options(submit, "the runner's API key")
    submit.set_defaults(handler=cmd_submit_result)


def cmd_claim(args: argparse.Namespace, settings: Settings) -> int:
    with RegistryClient(args.api, api_key(args, "runner"), args.timeout) as client:
        job = client.claim(args.gpu, args.lease)
    if job is None:
        return fail(f"no queued job for {args.gpu}")
    args.out.write_text(json.dumps(job["runnerDocument"], indent=1))
    print(f"claimed {job['id']}; job document in {args.out}", file=sys.stderr)
    return 0


def cmd_submit_result(args: argparse.Namespace, settings: Settings) -> int:
    try:
        result = json.loads(args.file.read_text())
    except (OSError, json.JSONDecodeError) as error:
        return fail(f"{args.file}: cannot read a result: {error}")
    if not isinstance(result, dict) or not isinstance(result.get("job"), str) or not ("envelope" in result or "failure" in result):
        return fail(f"{args.file}: a result file has a job ID and an envelope (or a failure)")
    with RegistryClient(args.api, api_key(args, "runner"), args.timeout) as client:
        if "failure" in result:
            failure = result["failure"]
            outcome = client.fail(result["job"], failure["code"], failure["message"])
            print(f"job {result['job']}: reported failure {failure['code']}; job {outcome['job']['state']}")
            return 0
        outcome = client.complete(result["job"], result["envelope"])
    run = outcome.get("run") or {}
    print(f"job {result['job']}: {outcome['job']['state']}" + (f"; run {run['digest']} ({run['evidenceLevel']})" if run else ""))
    return 0
