"""A real HTTP server on 127.0.0.1 that speaks the Hugging Face datasets-server's shape
(`/splits`, `/rows` with `offset` and `length`, at most 100 rows a page) over in-memory rows,
with faults injected per request (the datasets-server answers 500 while it builds an index).

Fault actions, consumed one per request in order, for a key `/splits` or
`/rows/{config}/{offset}`: `"500"`, `"404"`, …: that status; `"malformed"`: 200 with a body
that is not JSON.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.loaders.gpumode_synthetic import DATASET, PAGE_LENGTH, rows_body, splits_body
from tests.loaders.http_server import LoopbackServer, send_json


class DatasetsServer(LoopbackServer):
    def __init__(self, configs: dict[str, list[dict[str, Any]]], faults: dict[str, list[str]] | None = None):
        self.configs = configs
        self.faults = {key: list(actions) for key, actions in (faults or {}).items()}
        self.requests: list[str] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return self.root_url

    def hits(self, key: str) -> int:
        return sum(1 for seen in self.requests if seen == key)

    def _fault(self, key: str) -> str | None:
        with self._lock:
            self.requests.append(key)
            actions = self.faults.get(key)
            return actions.pop(0) if actions else None

    def __enter__(self) -> DatasetsServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if query.get("dataset") != DATASET:
                    return self._send(404, b'{"error": "The dataset does not exist."}')
                if parts.path == "/splits":
                    key, body = "/splits", splits_body(list(owner.configs))
                elif parts.path == "/rows" and query.get("config") in owner.configs:
                    offset, length = int(query.get("offset", 0)), min(int(query.get("length", PAGE_LENGTH)), PAGE_LENGTH)
                    key = f"/rows/{query['config']}/{offset}"
                    body = rows_body(owner.configs[query["config"]], offset, length)
                else:
                    return self._send(404, b'{"error": "Not found."}')
                fault = owner._fault(key)
                if fault == "malformed":
                    return self._send(200, b'{"rows": [{"row_idx": 0,')
                if fault:
                    return self._send(int(fault), b'{"error": "The server is busier than usual. Please retry later."}')
                return self._send(200, body)

            def _send(self, status: int, body: bytes):
                send_json(self, status, body)

        self.start(Handler)
        return self
