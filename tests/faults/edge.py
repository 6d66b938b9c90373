"""A real `kernelindex serve` stack attacked at its edge (Hive Gateway on 127.0.0.1), and what the
attacks need: raw HTTP request lines, a listener standing for another host, a process's CPU time
and memory from /proc."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
from pathlib import Path

import httpx

from tests.serving import ServedStack


class EdgeStack(ServedStack):
    """`kernelindex serve` on `home` with the bundled data (keyword arguments: its settings). Its
    `post` answers the raw response (the attacks look at statuses and headers)."""

    def post(self, query: str, variables: dict | None = None, timeout: float = 60, **kwargs) -> httpx.Response:  # type: ignore[override]
        return httpx.post(self.url, json={"query": query, "variables": variables or {}}, timeout=timeout, **kwargs)

    def gateway_pid(self) -> int:
        return find_pid("hive-gateway", f"--port {self.port}")

    def database_pid(self) -> int:
        return json.loads((self.home / "db.json").read_text())["pid"]

    def subgraph_url(self, name: str) -> str:
        """The internal URL of a subgraph, from the supergraph the stack composed."""
        text = (self.home / "supergraph.graphql").read_text()
        marker = f'@join__graph(name: "{name}", url: "'
        return text.split(marker, 1)[1].split('"', 1)[0]


def find_pid(*parts: str) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if all(part in cmdline for part in parts):
                return int(entry.name)
    raise AssertionError(f"no process with {parts} in its command line")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def raw_request(port: int, target: str, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """GET `target` exactly as written on the request line (no client normalises it)."""
    lines = [f"GET {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), parsed, body


class OtherHost:
    """A listener on 127.0.0.1 standing for a host the gateway must never reach: it records every
    request (path and headers) and answers with a script, as an attacker's server would."""

    def __init__(self):
        self.requests: list[tuple[str, dict[str, str]]] = []
        recorded = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the standard library's name)
                recorded.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = b"<script>alert(document.domain)</script>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
