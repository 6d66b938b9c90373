"""Signals and the time limit around one job: SIGTERM/SIGINT and the alarm become exceptions in
the job's thread, so the code that claimed the job always gets to report it."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

from kernels.runner.report import Stopped, TimedOut


def _stop(signum, frame) -> None:
    raise Stopped(signal.Signals(signum).name)


def _alarm(limit_s: float):
    def handler(signum, frame) -> None:
        raise TimedOut(f"{limit_s:g} s")

    return handler


@contextlib.contextmanager
def supervised(timeout_s: float | None) -> Iterator[None]:
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    if timeout_s:
        previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, _alarm(timeout_s))
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
