"""`kernelindex runner`: online (poll the API) or offline (a job file in, a signed result out).

  kernelindex runner --api URL --key SECRET --signing-key key.pem [--gpu NAME] [--once] [--poll S]
  kernelindex runner --job job.json --out result.dsse.json --signing-key key.pem

The offline result file is {"job": <job ID>, "envelope": <DSSE envelope>}; carry it to a host that
reaches the API and run `kernelindex submit-result result.dsse.json --api URL --key SECRET`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from registry.dsse import SignatureError, load_private_key

LEASE_SECONDS = 3600


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelindex runner", description="Run benchmark jobs and sign their results.")
    p.add_argument("--signing-key", required=True, type=Path, help="ed25519 private key (PEM) registered with the runner's API key")
    p.add_argument("--api", help="GraphQL endpoint of the registry (online mode)")
    p.add_argument("--key", help="the runner's API key (online mode)")
    p.add_argument("--gpu", default=None, help="GPU product to claim jobs for (default: this host's)")
    p.add_argument("--once", action="store_true", help="claim and run at most one job, then exit")
    p.add_argument("--poll", type=float, default=10.0, help="seconds between claims when the queue is empty")
    p.add_argument("--lease", type=int, default=LEASE_SECONDS, help="lease to ask for, in seconds")
    p.add_argument("--job", type=Path, help="a job document (offline mode; see BenchmarkJob.runnerDocument)")
    p.add_argument("--out", type=Path, help="where to write the signed result (offline mode)")
    return p


def _host_product() -> str:
    from kernels.harness.environment import environment_spec

    try:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        device = "cpu"
    return environment_spec(device)["hardware"]["product"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.signing_key.is_file():
        print(f"error: --signing-key: no such file {args.signing_key}", file=sys.stderr)
        return 1
    try:
        signing_key = load_private_key(args.signing_key.read_bytes())
    except (SignatureError, ValueError) as error:
        print(f"error: --signing-key: {error}", file=sys.stderr)
        return 1
    if args.job:
        if not args.out:
            print("error: --out is required with --job", file=sys.stderr)
            return 1
        return _offline(args.job, args.out, signing_key)
    if not (args.api and args.key):
        print("error: give --api and --key (online), or --job and --out (offline)", file=sys.stderr)
        return 1
    return _online(args, signing_key)


def _offline(job_path: Path, out: Path, signing_key) -> int:
    from kernels.runner.execute import JobFailure, execute_job

    try:
        job = json.loads(job_path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        print(f"error: --job: cannot read {job_path}: {error}", file=sys.stderr)
        return 1
    job = job.get("runnerDocument", job)
    try:
        outcome = execute_job(job, signing_key)
    except JobFailure as failure:
        out.write_text(json.dumps({"job": job.get("id"), "failure": {"code": failure.code, "message": str(failure)}}, indent=1))
        print(f"error: job failed ({failure.code}): {failure}", file=sys.stderr)
        return 1
    out.write_text(json.dumps({"job": job["id"], "envelope": outcome.envelope, "runStatus": outcome.run.spec.status.value}, indent=1))
    print(f"wrote {out}: run {outcome.run.metadata.name} ({outcome.run.spec.status.value})", file=sys.stderr)
    return 0


def _online(args, signing_key) -> int:
    from kernels.runner.client import ApiError, RegistryClient
    from kernels.runner.execute import JobFailure, execute_job

    gpu = args.gpu or _host_product()
    client = RegistryClient(args.api, args.key)
    try:
        while True:
            try:
                job = client.claim(gpu, args.lease)
            except ApiError as error:
                print(f"error: claim: {error}", file=sys.stderr)
                return 1
            if job is None:
                if args.once:
                    print(f"no queued job for {gpu}", file=sys.stderr)
                    return 0
                time.sleep(args.poll)
                continue
            document = job["runnerDocument"]
            try:
                client.start(job["id"])
                outcome = execute_job(document, signing_key)
                result = client.complete(job["id"], outcome.envelope)
                state = result["job"]["state"]
                run = result.get("run") or {}
                print(f"job {job['id']}: {state}" + (f", run {run.get('digest')} ({run.get('evidenceLevel')})" if run else ""), file=sys.stderr)
            except JobFailure as failure:
                client.fail(job["id"], failure.code, str(failure))
                print(f"job {job['id']}: failed ({failure.code}): {failure}", file=sys.stderr)
            except ApiError as error:
                print(f"job {job['id']}: the registry refused the result: {error}", file=sys.stderr)
            except Exception as error:  # a crash in the harness or the kernel: report, keep serving
                client.fail(job["id"], "runtime_error", f"{type(error).__name__}: {error}")
                print(f"job {job['id']}: failed (runtime_error): {error}", file=sys.stderr)
            if args.once:
                return 0
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
