"""`kernelindex jobs request|show|claim` and `kernelindex submit-result`: benchmark jobs over the
API. `request` asks for a controlled rerun; `show` follows a job to its run; `claim` and
`submit-result` are the API side of an offline runner (claim on a host that reaches the API,
run elsewhere with `kernelindex runner --job`, submit the result file)."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from cli.common import add_api_options, api_key, fail
from kernels.runner.client import RegistryClient
from registry.leases import DEFAULT_LEASE_SECONDS
from server.settings import Settings


def register(sub) -> None:
    jobs_parser = sub.add_parser("jobs", help="benchmark jobs over the API")
    jobs_sub = jobs_parser.add_subparsers(dest="jobs_command", required=True, metavar="{request,show,claim}")
    request = jobs_sub.add_parser("request", help="ask for a controlled rerun (maintainer or partner key); prints the job ID")
    request.add_argument("--implementation", required=True, help='the ImplementationRevision name, e.g. "kernelindex-051-reference"')
    request.add_argument("--gpu", required=True, help="GPU product, or this host's CPU (see `kernelindex runner --devices`)")
    request.add_argument("--definition", required=True, help='the definition\'s name or ID, e.g. "kernelindex-051-qkv-qknorm-backward"')
    request.add_argument("--cases", default=None, help="comma-separated case indexes of the workload (default: all)")
    request.add_argument("--idempotency-key", default=None, help="the same key again returns the same job (default: a new one)")
    add_api_options(request, "a maintainer or partner API key")
    request.set_defaults(handler=cmd_request)

    show = jobs_sub.add_parser("show", help="a job's state, failure and run")
    show.add_argument("job", metavar="JOB_ID")
    add_api_options(show, "not needed (reads are public)")
    show.set_defaults(handler=cmd_show)

    claim = jobs_sub.add_parser("claim", help="claim a job for an offline runner; writes its job document")
    add_api_options(claim, "the runner's API key")
    claim.add_argument("--gpu", required=True, help='GPU product, e.g. "NVIDIA H200"')
    claim.add_argument(
        "--lease", type=int, default=DEFAULT_LEASE_SECONDS, help=f"lease to ask for, in seconds (default {DEFAULT_LEASE_SECONDS})"
    )
    claim.add_argument("--out", required=True, type=Path, help="where to write the job document")
    claim.set_defaults(handler=cmd_claim)

    submit = sub.add_parser("submit-result", help="post an offline runner's signed result (or its failure)")
    submit.add_argument("file", type=Path, metavar="FILE", help="what `kernelindex runner --job ... --out FILE` wrote")
    add_api_options(submit, "the runner's API key")
    submit.set_defaults(handler=cmd_submit_result)


JOB_SUMMARY = "id state gpu attempts failure { code message } run { digest evidenceLevel status }"


def cmd_request(args: argparse.Namespace, settings: Settings) -> int:
    from client.api import ApiClient

    try:
        cases = [int(c) for c in args.cases.split(",")] if args.cases else None
    except ValueError:
        return fail(f"--cases: {args.cases!r} is not a comma-separated list of case indexes")
    with ApiClient(args.api, api_key(args, "maintainer or partner"), args.timeout) as api:
        definition = _definition_id(api, args.definition)
        payload = api.mutate(
            f"""mutation($input: BenchmarkJobRequestInput!) {{ benchmarkJobRequest(input: $input) {{
                 created job {{ {JOB_SUMMARY} }} userErrors {{ field message code }} }} }}""",
            {
                "input": {
                    "definition": definition,
                    "implementation": args.implementation,
                    "gpu": args.gpu,
                    "cases": cases,
                    "idempotencyKey": args.idempotency_key or uuid.uuid4().hex,
                }
            },
            "benchmarkJobRequest",
        )
    job = payload["job"]
    print(job["id"])
    print(
        f"{'requested' if payload['created'] else 'already requested'}: job {job['id']} ({job['state']}) for {job['gpu']}", file=sys.stderr
    )
    return 0


def _definition_id(api, given: str) -> str:
    """A definition's global ID from its name (or the ID itself)."""
    by_name = api.query("query($name: String!) { definition(name: $name) { id } }", {"name": given})["definition"]
    return by_name["id"] if by_name else given


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    from client.api import ApiClient

    with ApiClient(args.api, args.api_key, args.timeout) as api:
        job = api.query(f"query($id: ID!) {{ benchmarkJob(id: $id) {{ {JOB_SUMMARY} }} }}", {"id": args.job})["benchmarkJob"]
    if job is None:
        return fail(f"no job {args.job}")
    line = f"job {job['id']}: {job['state']} on {job['gpu']} after {job['attempts']} failed attempt(s)"
    if job["failure"]:
        line += f"; last failure {job['failure']['code']}: {job['failure']['message']}"
    if job["run"]:
        line += f"; run {job['run']['digest']} ({EVIDENCE_WORDS.get(job['run']['evidenceLevel'], job['run']['evidenceLevel'])}, {job['run']['status']})"
    print(line)
    return 0


EVIDENCE_WORDS = {
    "REPORTED": "Reported",
    "REPRODUCIBLE": "Reproducible",
    "KERNELINDEX_VERIFIED": "KernelIndex Verified",
    "INDEPENDENTLY_REPLICATED": "Independently Replicated",
}


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
