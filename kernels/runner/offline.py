"""The offline runner: a job document in (from `kernelindex jobs claim`), a result file out (for
`kernelindex submit-result`). Whatever happens, the file says either the signed run or the coded
failure, so the job never stays claimed without a reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernels.runner import device, report
from kernels.runner.execute import JobFailure, execute_job
from kernels.runner.supervise import stop_signals, time_limit


def run_offline(job_path: Path, out: Path, signing_key, timeout_s: float | None = None) -> int:
    try:
        document = json.loads(job_path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        print(f"error: --job: cannot read a job document from {job_path}: {error}", file=sys.stderr)
        return 1
    if not isinstance(document, dict):
        print(f"error: --job: {job_path} is not a job document", file=sys.stderr)
        return 1
    job = document.get("runnerDocument", document)
    job_id = job.get("id")
    try:
        with stop_signals(), time_limit(timeout_s):
            why_not = device.refusal(job, device.host_devices())
            if why_not:
                raise JobFailure("runtime_error", why_not)
            outcome = execute_job(job, signing_key)
    except (Exception, report.Stopped, report.TimedOut) as error:  # every failure after the claim is reported, never raised
        failure = report.failure_from(error)
        out.write_text(json.dumps(report.failure_document(job_id, failure), indent=1))
        print(f"error: job {job_id} failed ({failure.code}): {failure}; wrote {out} for `kernelindex submit-result`", file=sys.stderr)
        return 1
    status = outcome.run.spec.to_json()["status"]
    out.write_text(json.dumps({"job": job_id, "envelope": outcome.envelope, "runStatus": status}, indent=1))
    print(f"wrote {out}: run {outcome.run.metadata.name} ({status})", file=sys.stderr)
    return 0
