"""Signals and the time limit around a runner's work: SIGTERM/SIGINT and the alarm become
exceptions in the main thread, so the code that claimed a job always gets to report it."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

from kernels.runner.report import Stopped, TimedOut


def _stop(signum, frame) -> None:
    raise Stopped(signal.Signals(signum).name)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """For the runner's whole life: a stop signal raises Stopped wherever the runner is."""
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Around one job: past `seconds`, TimedOut is raised in it."""
    if not seconds:
        yield
        return

    def expired(signum, frame) -> None:
        raise TimedOut(f"{seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
