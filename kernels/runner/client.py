"""The runner's side of the GraphQL API (it never talks to the database)."""

from __future__ import annotations

import json
from typing import Any

import httpx

JOB_FIELDS = "id state gpu implementationName runnerDocument"


class ApiError(RuntimeError):
    """The API refused or could not be reached; the message says which."""


class RegistryClient:
    def __init__(self, api_url: str, api_key: str, timeout_s: float = 60.0):
        self.url = api_url.rstrip("/")
        if not self.url.endswith("/graphql"):
            self.url += "/graphql"
        self.http = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {api_key}"})

    def close(self) -> None:
        self.http.close()

    def _call(self, query: str, variables: dict[str, Any], field: str) -> dict[str, Any]:
        try:
            response = self.http.post(self.url, json={"query": query, "variables": variables})
        except httpx.HTTPError as error:
            raise ApiError(f"cannot reach {self.url}: {error}") from None
        try:
            body = response.json()
        except json.JSONDecodeError:
            raise ApiError(f"{self.url} answered HTTP {response.status_code} without JSON") from None
        if body.get("errors"):
            raise ApiError("; ".join(e.get("message", "?") for e in body["errors"]))
        payload = body["data"][field]
        if payload.get("userErrors"):
            raise ApiError("; ".join(f"{e['code']}: {e['message']}" for e in payload["userErrors"]))
        return payload

    def claim(self, gpu: str, lease_seconds: int) -> dict[str, Any] | None:
        query = f"mutation($gpu: String!, $lease: Int!) {{ benchmarkJobClaim(input: {{gpu: $gpu, leaseSeconds: $lease}}) {{ job {{ {JOB_FIELDS} }} userErrors {{ field message code }} }} }}"
        job = self._call(query, {"gpu": gpu, "lease": lease_seconds}, "benchmarkJobClaim")["job"]
        return job

    def start(self, job_id: str) -> None:
        query = "mutation($job: ID!) { benchmarkJobStart(input: {job: $job}) { job { state } userErrors { field message code } } }"
        self._call(query, {"job": job_id}, "benchmarkJobStart")

    def complete(self, job_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
        query = """mutation($job: ID!, $envelope: String!) { benchmarkJobComplete(input: {job: $job, envelope: $envelope}) {
          job { state failure { code message } } run { id digest evidenceLevel } userErrors { field message code } } }"""
        return self._call(query, {"job": job_id, "envelope": json.dumps(envelope)}, "benchmarkJobComplete")

    def fail(self, job_id: str, code: str, message: str) -> dict[str, Any]:
        query = """mutation($job: ID!, $code: BenchmarkJobFailureCode!, $message: String!) {
          benchmarkJobFail(input: {job: $job, code: $code, message: $message}) { job { state attempts } userErrors { field message code } } }"""
        return self._call(query, {"job": job_id, "code": code, "message": message[:4000]}, "benchmarkJobFail")
