"""Turning whatever went wrong after a claim into a coded failure with a one-line reason.

Codes are the API's BenchmarkJobFailureCode values; runtime_error and timeout are retried by the
registry, compile_error and incorrect_numerical are final."""

from __future__ import annotations

from kernels.runner.execute import JobFailure


class Stopped(BaseException):
    """SIGTERM or SIGINT reached the runner mid-job (BaseException: no handler may swallow it)."""


class TimedOut(BaseException):
    """The job ran past the runner's --timeout."""


def failure_from(error: BaseException) -> JobFailure:
    if isinstance(error, JobFailure):
        return error
    if isinstance(error, Stopped):
        return JobFailure("runtime_error", f"the runner was stopped ({error}) before the job finished")
    if isinstance(error, TimedOut):
        return JobFailure("timeout", f"the job ran longer than {error}")
    reason = " ".join(str(error).split()) or "no message"
    return JobFailure("runtime_error", f"{type(error).__name__}: {reason}"[:2000])


def failure_document(job_id: str | None, failure: JobFailure) -> dict:
    """What an offline runner writes to --out for `kernelindex submit-result`."""
    return {"job": job_id, "failure": {"code": failure.code, "message": str(failure)}}
