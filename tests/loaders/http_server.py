"""A real HTTP server on 127.0.0.1 that serves a snapshot directory as the SOL-ExecBench API,
with faults injected per request (for the loader's retry, timeout and rejection tests).

Fault actions, consumed one per request in order for a key such as `/kernels`, `/kernels/901`
or `/submissions/901/20` (kernel 901, offset 20):

- `"500"`, `"503"`, `"404"`: that status with a small JSON error body
- `"429:N"`: 429 with `Retry-After: N`
- `"timeout:S"`: sleep S seconds before answering (normally)
- `"malformed"`: 200 with a body that is not JSON
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


def send_json(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


class LoopbackServer:
    """A ThreadingHTTPServer on a free 127.0.0.1 port, served from a daemon thread."""

    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def start(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def root_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __exit__(self, *exc) -> None:
        if self._thread is None:
            return  # already stopped
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._thread = None


class SnapshotServer(LoopbackServer):
    def __init__(self, root: Path, faults: dict[str, list[str]] | None = None):
        self.root = Path(root)
        self.faults = {key: list(actions) for key, actions in (faults or {}).items()}
        self.requests: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/api"

    def hits(self, key: str) -> list[float]:
        """When each request for `key` arrived (monotonic seconds)."""
        return [at for at, seen in self.requests if seen == key]

    def _next_fault(self, key: str) -> str | None:
        with self._lock:
            self.requests.append((time.monotonic(), key))
            actions = self.faults.get(key)
            return actions.pop(0) if actions else None

    def __enter__(self) -> SnapshotServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                path = parts.path.removeprefix("/api")
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if path == "/submissions":
                    key = f"/submissions/{query.get('kernel_id')}/{query.get('offset', '0')}"
                    file = owner.root / "submissions" / query.get("kernel_id", "") / f"offset-{query.get('offset', '0')}.json"
                elif path == "/kernels":
                    key, file = path, owner.root / "kernels.json"
                elif path.startswith("/kernels/"):
                    key, file = path, owner.root / "kernels" / f"{path.removeprefix('/kernels/')}.json"
                else:
                    key, file = path, None
                fault = owner._next_fault(key)
                try:
                    if fault and fault.startswith("timeout:"):
                        time.sleep(float(fault.split(":")[1]))
                        fault = None
                    if fault == "malformed":
                        return self._send(200, b'{"data": {"submissions": [ {"id": 1,')
                    if fault and fault.startswith("429"):
                        return self._send(429, b'{"error": "slow down"}', {"Retry-After": fault.split(":")[1]})
                    if fault:
                        return self._send(int(fault), f'{{"error": "injected {fault} for {key}"}}'.encode())
                    if file is None or not file.is_file():
                        return self._send(404, b'{"error": "not found"}')
                    return self._send(200, file.read_bytes())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None):
                send_json(self, status, body, headers)

        self.start(Handler)
        return self
