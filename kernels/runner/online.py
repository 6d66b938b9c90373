"""The online runner: claim a job for this host's device, run it, post the signed result.

Three steps, each its own function so checks can be added without touching the others:
`refusal` (kernels.runner.device: may this host run the job?), `execute_job` (run and sign),
and `_report_*` (post the outcome). Anything that goes wrong after a claim is posted as a coded
failure (the registry re-queues runtime errors and timeouts); a stop signal mid-job does the
same before the runner exits."""

from __future__ import annotations

import sys
import time

from kernels.runner import device, report
from kernels.runner.client import ApiError, RegistryClient
from kernels.runner.execute import JobFailure, execute_job
from kernels.runner.lease import LeaseKeeper
from kernels.runner.supervise import stop_signals, time_limit


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_online(args, api_key: str, signing_key) -> int:
    devices = device.host_devices()
    gpu = args.gpu or devices[0].product
    if device.device_for(gpu, devices) is None:
        _say(f"error: --gpu: this host has no {gpu!r} (detected: {', '.join(d.product for d in devices)})")
        return 1
    # One signal handler for the runner's whole life, so no moment between a claim and its
    # report is left where a stop signal would kill the process with the job still held.
    with stop_signals(), RegistryClient(args.api, api_key, args.timeout) as client:
        while True:
            job = None
            try:
                job = client.claim(gpu, args.lease)
                if job is None:
                    if args.once:
                        _say(f"no queued job for {gpu}")
                        return 0
                    time.sleep(args.poll)
                    continue
                _run_claimed(client, job, devices, signing_key, args)
            except report.Stopped as stop:
                if job is not None:
                    _report_failure(client, job["id"], report.failure_from(stop))
                _say(f"stopped ({stop})")
                return 0
            except ApiError as error:
                _say(f"error: claim: {error}")
                return 1
            if args.once:
                return 0


def _run_claimed(client: RegistryClient, job: dict, devices, signing_key, args) -> None:
    """Run one claimed job to a reported end (a stop signal is left to the caller to report)."""
    document = job["runnerDocument"]
    try:
        with time_limit(args.job_timeout), LeaseKeeper(client, job["id"], args.lease):
            why_not = device.refusal(document, devices)
            if why_not:
                raise JobFailure("runtime_error", why_not)
            client.start(job["id"])
            outcome = execute_job(document, signing_key)
    except (Exception, report.TimedOut) as error:  # every failure after the claim is posted, never raised
        _report_failure(client, job["id"], report.failure_from(error))
        return
    _report_result(client, job["id"], outcome.envelope)


def _report_result(client: RegistryClient, job_id: str, envelope: dict) -> None:
    try:
        result = client.complete(job_id, envelope)
    except ApiError as error:
        _say(f"error: job {job_id}: the registry refused the result: {error}")
        return
    run = result.get("run") or {}
    _say(f"job {job_id}: {result['job']['state']}" + (f", run {run.get('digest')} ({run.get('evidenceLevel')})" if run else ""))


def _report_failure(client: RegistryClient, job_id: str, failure: JobFailure) -> None:
    try:
        posted = client.fail(job_id, failure.code, str(failure))
    except ApiError as error:
        _say(f"error: job {job_id} failed ({failure.code}: {failure}) and the registry refused the report: {error}")
        return
    _say(f"job {job_id}: failed ({failure.code}): {failure}; the job is now {posted['job']['state']}")
