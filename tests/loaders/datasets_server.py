"""A real HTTP server on 127.0.0.1 that speaks the Hugging Face datasets-server's API (as
huggingface/dataset-viewer documents it: docs/source/{splits,rows,filter}.md, openapi.json) over
in-memory rows: `/splits`; `/rows` and `/filter` with `offset` and `length` (at most 100 rows a
page; `/filter` without `where` gives every row by row index, plus `partial`); error answers
with the `X-Error-Code` header and `{"error": ...}` bodies of the API's own examples.

- `too_big`: configs whose `/rows` answers 500 `TooBigContentError` ("Scan size limit
  exceeded", as for the largest GPUMODE/kernelbot-data configs); they are read through /filter.
- `index_build`: per config, how many `/filter` requests answer 500 `ResponseNotReady` before
  its index is built (`None`: never).
- `partial`: configs whose `/filter` answers say `partial: true`.
- `faults`: actions consumed one per request in order, for a key `/splits`, `/rows/{config}/{offset}`
  or `/filter/{config}/{offset}`: `"500"`, `"404"`, …: that status; `"429:N"`: 429 with
  `Retry-After: N`; `"malformed"`: 200 with a body that is not JSON.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.loaders.gpumode_synthetic import DATASET, PAGE_LENGTH, rows_body, splits_body
from tests.loaders.http_server import LoopbackServer, send_json

# Error bodies: dataset-viewer's openapi.json examples and libcommon/parquet_utils.py's message.
NOT_READY = {"error": "The server is busier than usual and the response is not ready yet. Please retry later."}
TOO_BIG = {
    "error": "Parquet error: Scan size limit exceeded: attempted to read 733472261 bytes, limit is 300000000 bytes\n\n"
    "Make sure that\n\n1. the Parquet files contain a page index to enable random access without loading entire row "
    "groups2. otherwise use smaller row-group sizes when serializing the Parquet files\n"
}
UNEXPECTED = {"error": "Unexpected error."}


class DatasetsServer(LoopbackServer):
    def __init__(
        self,
        configs: dict[str, list[dict[str, Any]]],
        faults: dict[str, list[str]] | None = None,
        *,
        too_big: set[str] | frozenset[str] = frozenset(),
        index_build: dict[str, int | None] | None = None,
        partial: set[str] | frozenset[str] = frozenset(),
    ):
        self.configs = configs
        self.faults = {key: list(actions) for key, actions in (faults or {}).items()}
        self.too_big = set(too_big)
        self.index_build = dict(index_build or {})
        self.partial = set(partial)
        self.requests: list[str] = []
        self.times: list[tuple[float, str]] = []
        self._filter_asked: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return self.root_url

    def hits(self, key: str) -> int:
        return sum(1 for seen in self.requests if seen == key)

    def hit_times(self, key: str) -> list[float]:
        return [at for at, seen in self.times if seen == key]

    def _fault(self, key: str) -> str | None:
        with self._lock:
            self.requests.append(key)
            self.times.append((time.monotonic(), key))
            actions = self.faults.get(key)
            return actions.pop(0) if actions else None

    def _index_ready(self, config: str) -> bool:
        with self._lock:
            asked = self._filter_asked[config] = self._filter_asked.get(config, 0) + 1
        build = self.index_build.get(config, 0)
        return build is not None and asked > build

    def __enter__(self) -> DatasetsServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if query.get("dataset") != DATASET:
                    return self._error(404, {"error": "The dataset does not exist."}, "DatasetNotFoundError")
                config = query.get("config")
                offset, length = int(query.get("offset", 0)), min(int(query.get("length", PAGE_LENGTH)), PAGE_LENGTH)
                if parts.path == "/splits":
                    key = "/splits"
                elif parts.path in ("/rows", "/filter") and config in owner.configs:
                    key = f"{parts.path}/{config}/{offset}"
                else:
                    return self._error(404, {"error": "Not found."}, "ResponseNotFound")
                fault = owner._fault(key)
                if fault == "malformed":
                    return send_json(self, 200, b'{"rows": [{"row_idx": 0,')
                if fault and fault.startswith("429"):
                    return self._error(429, {"error": "Too many requests."}, None, {"Retry-After": fault.split(":")[1]})
                if fault:
                    return self._error(int(fault), NOT_READY if fault.startswith("5") else {"error": "Not found."}, None)
                if key == "/splits":
                    return send_json(self, 200, splits_body(list(owner.configs)))
                rows = owner.configs[config]
                if parts.path == "/rows":
                    if config in owner.too_big:
                        return self._error(500, TOO_BIG, "TooBigContentError")
                    return send_json(self, 200, rows_body(rows, offset, length))
                if not owner._index_ready(config):
                    return self._error(500, NOT_READY, "ResponseNotReady")
                body = json.loads(rows_body(rows, offset, length))
                body["partial"] = config in owner.partial
                return send_json(self, 200, json.dumps(body, separators=(",", ":")).encode())

            def _error(self, status: int, body: dict, code: str | None, headers: dict[str, str] | None = None):
                headers = dict(headers or {})
                if code:
                    headers["X-Error-Code"] = code
                send_json(self, status, json.dumps(body).encode(), headers)

        self.start(Handler)
        return self
