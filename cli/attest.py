"""`kernelindex attest`: sign a partner's reproduction of a run and submit it through the API."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cli.common import add_api_options, add_signing_key, api_key, fail, load_signing_key
from server.settings import Settings


def register(sub) -> None:
    attest = sub.add_parser("attest", help="sign a reproduction of a run (partner key) and submit it to the API")
    attest.add_argument("--run", required=True, help="the run's ID, or its sha256: digest")
    attest.add_argument("--result", required=True, type=Path, help="the measurement as JSON (the reproduction predicate)")
    add_signing_key(attest, "the ed25519 private key (PEM) registered with your partner API key")
    add_api_options(attest, "the partner API key")
    attest.set_defaults(handler=cmd_attest)


def cmd_attest(args: argparse.Namespace, settings: Settings) -> int:
    from client.api import ApiClient
    from registry.reproduction import PredicateError, parse_predicate, signed_reproduction
    from resolvers import ids

    secret = api_key(args, "partner")
    if not args.result.is_file():
        return fail(f"--result: no such file {args.result}")
    try:
        result = json.loads(args.result.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return fail(f"--result: {args.result} is not JSON ({error})")
    try:
        predicate = parse_predicate(result)
    except PredicateError as error:
        for path, reason in error.problems:
            print(f"error: {args.result}: {path.removeprefix('predicate.')}: {reason}", file=sys.stderr)
        return 1
    private_key = load_signing_key(args.signing_key)
    if args.run.startswith("sha256:"):
        run_id = ids.encode("Run", args.run)
    else:
        try:
            ids.decode_as(args.run, "Run")
        except ids.BadGlobalId as error:
            return fail(f"--run: {error}; give a run ID or a sha256: digest")
        run_id = args.run

    with ApiClient(args.api, secret, args.timeout) as api:
        run = api.query("query($id: ID!) { run(id: $id) { digest name } }", {"id": run_id})["run"]
        if run is None:
            return fail(f"--run: no run {args.run} at {api.url}")
        envelope = signed_reproduction(run["digest"], run["name"], predicate, private_key)
        submitted = api.query(
            """mutation($input: RunSubmitReproductionInput!) { runSubmitReproduction(input: $input) {
                 created attestation { id digest } userErrors { field message code } } }""",
            {"input": {"run": run_id, "envelope": json.dumps(envelope)}},
        )["runSubmitReproduction"]
    if submitted["userErrors"]:
        for problem in submitted["userErrors"]:
            print(f"error: {problem['code']}: {problem['message']}", file=sys.stderr)
        return 1
    attestation = submitted["attestation"]
    state = "recorded" if submitted["created"] else "already recorded"
    print(attestation["id"])
    print(f"reproduction of {run['digest']} {state} as attestation {attestation['digest']}", file=sys.stderr)
    return 0
