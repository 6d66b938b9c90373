"""`kernelindex runner`: run benchmark jobs on this host and sign their results.

Online, it claims jobs from the API itself; offline, a job document comes in (`kernelindex jobs
claim`) and a result file goes out (`kernelindex submit-result`). Needs the kernels extra."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.common import CommandError, add_api_options, add_signing_key, api_key, load_signing_key, require_kernels_extra
from registry.leases import DEFAULT_LEASE_SECONDS
from server.settings import Settings

JOB_TIMEOUT_S = 3 * 3600.0

USAGE = """
  online:  kernelindex runner --signing-key key.pem [--api URL] [--api-key SECRET] [--gpu NAME] [--once]
  offline: kernelindex runner --signing-key key.pem --job job.json --out result.json
  devices: kernelindex runner --devices"""


def register(sub) -> None:
    runner = sub.add_parser(
        "runner",
        help="run benchmark jobs and sign their results (needs the kernels extra)",
        description=__doc__.split("\n\n")[0] + USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_signing_key(runner, "ed25519 private key (PEM) registered with the runner's API key", required=False)
    runner.add_argument(
        "--devices",
        action="store_true",
        help="print the devices this host can run jobs for (as jobs name them in `gpu`), best first, and exit",
    )
    online = runner.add_argument_group("online (claims from the API)")
    add_api_options(online, "the runner's API key")
    online.add_argument("--gpu", default=None, help="GPU product to claim jobs for (default and check: this host's)")
    online.add_argument("--once", action="store_true", help="claim and run at most one job, then exit")
    online.add_argument("--poll", type=float, default=10.0, help="seconds between claims when the queue is empty")
    online.add_argument(
        "--lease", type=int, default=DEFAULT_LEASE_SECONDS, help=f"lease to ask for, in seconds (default {DEFAULT_LEASE_SECONDS})"
    )
    runner.add_argument(
        "--job-timeout",
        type=float,
        default=JOB_TIMEOUT_S,
        help=f"seconds one job may run before it is reported as a timeout (default {JOB_TIMEOUT_S:g})",
    )
    offline = runner.add_argument_group("offline (a job document in, a result file out)")
    offline.add_argument("--job", type=Path, default=None, help="a job document (BenchmarkJob.runnerDocument)")
    offline.add_argument("--out", type=Path, default=None, help="where to write the signed result or the failure")
    runner.set_defaults(handler=cmd_runner)


def cmd_runner(args: argparse.Namespace, settings: Settings) -> int:
    require_kernels_extra("runner")
    if args.devices:
        from kernels.runner.device import host_devices

        for found in host_devices():
            print(found.product)
        return 0
    if args.signing_key is None:
        raise CommandError("--signing-key: required to run jobs (the key results are signed with)")
    if args.job is not None and not args.out:
        raise CommandError("--out: required with --job (where the result goes)")
    signing_key = load_signing_key(args.signing_key)
    if args.job is not None:
        from kernels.runner.offline import run_offline

        return run_offline(args.job, args.out, signing_key, args.job_timeout)
    from kernels.runner.online import run_online

    return run_online(args, api_key(args, "runner"), signing_key)
