"""Keeping a claimed job's lease alive while it runs (a background thread renews it at a third
of its length), so a long job is never re-queued under a live runner."""

from __future__ import annotations

import sys
import threading

from kernels.runner.client import ApiError, RegistryClient


class LeaseKeeper:
    def __init__(self, client: RegistryClient, job_id: str, lease_seconds: int):
        self.client, self.job_id, self.lease_seconds = client, job_id, lease_seconds
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"lease-{job_id}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)

    def _renew(self) -> None:
        while not self._done.wait(max(self.lease_seconds / 3, 1)):
            try:
                self.client.renew(self.job_id, self.lease_seconds)
            except ApiError as error:
                print(f"warning: job {self.job_id}: lease renewal refused: {error}", file=sys.stderr, flush=True)
