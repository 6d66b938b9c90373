"""Benchmark: issue 8/8's attacks on a running `kernelindex serve`, one table.

    kernelindex serve --port 8160 &      # with KERNELINDEX_HOME=/tmp/some-home
    python bench/edge.py --port 8160 --home /tmp/some-home [--clients 24] [--stall]

For each attack: the HTTP status and the error code of the answer, its wall time and size, the
seconds of CPU the gateway process spent on it (from /proc) and its peak RSS; then `--clients`
concurrent clients of the alias-and-manifest query (peak gateway RSS); with `--stall`, the
seconds from SIGSTOP of the embedded database to a non-200 /readiness, and from SIGCONT back to
200. Every loop is bounded (a 150 s client timeout per attack). 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ATTACKS = {
    "{ __typename x 90,000 } (967 KiB)": "{ " + "__typename " * 90_000 + "}",
    "30,000 aliases of runs(first:1)": "{ " + " ".join(f"a{n}:runs(first:1){{nodes{{id}}}}" for n in range(30_000)) + " }",
    "a chain of 20,000 fragments": "query { ...f0 } "
    + " ".join(f"fragment f{n} on Query {{ ...f{n + 1} }}" for n in range(19_999))
    + " fragment f19999 on Query { __typename }",
    "40,000 @include": "{ __typename " + "@include(if: true) " * 40_000 + "}",
    "30 x runs(first:100){nodes{manifest}}": "{ "
    + " ".join(f"a{n}: runs(first: 100) {{ nodes {{ manifest }} }}" for n in range(30))
    + " }",
}


def gateway_pid(port: int) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "hive-gateway" in cmdline and f"--port {port}" in cmdline:
                return int(entry.name)
    raise SystemExit(f"no Hive Gateway on port {port}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Peak:
    """The peak RSS of `pid` while in the with-block (sampled every 50 ms)."""

    def __init__(self, pid: int):
        self.pid, self.value, self.done = pid, rss_mib(pid), threading.Event()

    def __enter__(self):
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def _watch(self):
        while not self.done.is_set():
            self.value = max(self.value, rss_mib(self.pid))
            time.sleep(0.05)

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join(timeout=5)


def attack(url: str, pid: int, query: str) -> dict:
    cpu = cpu_seconds(pid)
    started = time.monotonic()
    with Peak(pid) as peak:
        try:
            response = httpx.post(url, json={"query": query}, timeout=150)
            status, size = response.status_code, len(response.content)
            try:
                errors = response.json().get("errors") or []
            except ValueError:
                errors = []
            code = errors[0].get("extensions", {}).get("code", "-") if errors else "-"
        except httpx.HTTPError as error:
            status, size, code = type(error).__name__, 0, "-"
    return {
        "status": status,
        "code": code,
        "wall": time.monotonic() - started,
        "cpu": cpu_seconds(pid) - cpu,
        "bytes": size,
        "rss": peak.value,
    }


def until(predicate, timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.2)
    return None


def readiness(base: str) -> int:
    try:
        return httpx.get(f"{base}/readiness", timeout=5).status_code
    except httpx.HTTPError:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home", type=Path, help="the stack's KERNELINDEX_HOME (for --stall)")
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--stall", action="store_true", help="SIGSTOP/SIGCONT the embedded database")
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    url = f"{base}/graphql"
    pid = gateway_pid(args.port)
    print(f"gateway pid {pid}, RSS {rss_mib(pid):.0f} MiB, load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"| {'attack':<40} | status | code | wall s | gateway CPU s | bytes | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    for name, query in ATTACKS.items():
        r = attack(url, pid, query)
        print(f"| {name:<40} | {r['status']} | {r['code']} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['bytes']:,} | {r['rss']:.0f} |")

    heavy = ATTACKS["30 x runs(first:100){nodes{manifest}}"]
    before = rss_mib(pid)
    with Peak(pid) as peak, ThreadPoolExecutor(args.clients) as pool:
        results = list(pool.map(lambda _: attack(url, pid, heavy), range(args.clients)))
    codes = sorted({str(r["code"]) for r in results})
    print(f"\n{args.clients} concurrent clients of the manifest query: codes {codes}, RSS {before:.0f} -> peak {peak.value:.0f} MiB")

    if args.stall:
        if args.home is None:
            raise SystemExit("--stall needs --home")
        database = json.loads((args.home / "db.json").read_text())["pid"]
        assert readiness(base) == 200, "not ready before the stall"
        os.kill(database, signal.SIGSTOP)
        try:
            down = until(lambda: readiness(base) != 200, timeout=30)
        finally:
            os.kill(database, signal.SIGCONT)
        up = until(lambda: readiness(base) == 200, timeout=60)
        print(
            f"readiness after SIGSTOP of the database: non-200 after {down if down is None else f'{down:.1f}'} s; 200 again {up if up is None else f'{up:.1f}'} s after SIGCONT"
        )


if __name__ == "__main__":
    main()
