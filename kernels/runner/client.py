"""The runner's operations on the API (claim, start, renew, complete, fail), over the shared
GraphQL client; the runner never talks to the database."""

from __future__ import annotations

import json
from typing import Any

from client.api import ApiClient, ApiError

__all__ = ["ApiError", "RegistryClient"]

JOB_FIELDS = "id state gpu implementationName runnerDocument"


class RegistryClient(ApiClient):
    def claim(self, gpu: str, lease_seconds: int) -> dict[str, Any] | None:
        query = f"mutation($gpu: String!, $lease: Int!) {{ benchmarkJobClaim(input: {{gpu: $gpu, leaseSeconds: $lease}}) {{ job {{ {JOB_FIELDS} }} userErrors {{ field message code }} }} }}"
        return self.mutate(query, {"gpu": gpu, "lease": lease_seconds}, "benchmarkJobClaim")["job"]

    def start(self, job_id: str) -> None:
        query = "mutation($job: ID!) { benchmarkJobStart(input: {job: $job}) { job { state } userErrors { field message code } } }"
        self.mutate(query, {"job": job_id}, "benchmarkJobStart")

    def complete(self, job_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
        query = """mutation($job: ID!, $envelope: String!) { benchmarkJobComplete(input: {job: $job, envelope: $envelope}) {
          job { state failure { code message } } run { id digest evidenceLevel } userErrors { field message code } } }"""
        return self.mutate(query, {"job": job_id, "envelope": json.dumps(envelope)}, "benchmarkJobComplete")

    def fail(self, job_id: str, code: str, message: str) -> dict[str, Any]:
        query = """mutation($job: ID!, $code: BenchmarkJobFailureCode!, $message: String!) {
          benchmarkJobFail(input: {job: $job, code: $code, message: $message}) { job { state attempts } userErrors { field message code } } }"""
        return self.mutate(query, {"job": job_id, "code": code, "message": message[:4000]}, "benchmarkJobFail")

    def renew(self, job_id: str, lease_seconds: int) -> None:
        query = """mutation($job: ID!, $lease: Int!) { benchmarkJobRenewLease(input: {job: $job, leaseSeconds: $lease}) {
          job { state } userErrors { field message code } } }"""
        self.mutate(query, {"job": job_id, "lease": lease_seconds}, "benchmarkJobRenewLease")
