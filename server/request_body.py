"""HTTP request bodies, checked before anything parses them for real.

Every body is read up to the limit (Content-Length or not: a chunked body is counted as it
arrives) and refused with 413 `PAYLOAD_TOO_LARGE` past it. A JSON body for /graphql must be
UTF-8, JSON, an object, with a string `query`, an object or
null `variables`/`extensions`, a string or null `operationName`, and no lone surrogate
anywhere (it is not text and cannot be stored or sent on); otherwise 400 with a coded
GraphQL error. The checked body is then handed on unchanged. A plain-text refusal from
Strawberry on /graphql (no query, an operation name that names none) is sent as a coded GraphQL
error too, so every answer there is JSON.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

GRAPHQL_PATH = "/graphql"


class BadBody(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code


def _first_lone_surrogate(value: Any, path: str) -> str | None:
    """The path of the first string holding a lone surrogate, if any (iterative)."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return where
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((f"{where}.{key}"[:200], child))
                stack.append((f"{where} (a key)"[:200], key))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]"[:200], child) for i, child in enumerate(item))
    return None


def check_graphql_json(body: bytes) -> None:
    """Raise BadBody unless `body` is a well-formed GraphQL-over-HTTP JSON request."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadBody(
            400, "BAD_REQUEST", f"the request body is not UTF-8 (byte 0x{body[error.start]:02x} at offset {error.start})"
        ) from None
    try:
        request = json.loads(text)
    except RecursionError:
        raise BadBody(400, "BAD_REQUEST", "the request body is JSON nested too deeply") from None
    except ValueError as error:
        raise BadBody(400, "BAD_REQUEST", f"the request body is not JSON: {str(error)[:200]}") from None
    if not isinstance(request, dict):
        raise BadBody(
            400, "BAD_REQUEST", f"the request body must be a JSON object, not {type(request).__name__ if request is not None else 'null'}"
        )
    if not isinstance(request.get("query"), str):
        raise BadBody(400, "BAD_REQUEST", "`query` must be a string" if "query" in request else "the request has no `query`")
    for name in ("variables", "extensions"):
        if request.get(name) is not None and not isinstance(request[name], dict):
            raise BadBody(400, "BAD_REQUEST", f"`{name}` must be an object or null")
    if request.get("operationName") is not None and not isinstance(request["operationName"], str):
        raise BadBody(400, "BAD_REQUEST", "`operationName` must be a string or null")
    where = _first_lone_surrogate(request, "request")
    if where is not None:
        raise BadBody(400, "BAD_USER_INPUT", f"{where}: a lone surrogate is not text (not encodable as UTF-8)")


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"errors": [{"message": message, "extensions": {"code": code}}]}).encode()


class RequestBodyGuard:
    """ASGI middleware: read, bound and check the body, then pass it on."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            body = await self._read(scope, receive)
            headers = dict(scope.get("headers") or [])
            is_json = headers.get(b"content-type", b"").split(b";")[0].strip().lower() == b"application/json"
            if scope["path"] == GRAPHQL_PATH and scope["method"] == "POST" and is_json:
                check_graphql_json(body)
        except BadBody as error:
            await _answer(send, error.status, error_body(error.code, str(error)))
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # then only a disconnect can come

        await self.app(scope, replay, _json_refusals(send) if scope["path"] == GRAPHQL_PATH else send)

    async def _read(self, scope: Scope, receive: Receive) -> bytes:
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large()
        chunks, received = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > self.max_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _too_large(self) -> BadBody:
        return BadBody(413, "PAYLOAD_TOO_LARGE", f"request body is larger than the limit of {self.max_bytes} bytes")


def _json_refusals(send: Send) -> Send:
    """Wrap `send`: a 4xx text/plain response becomes the same refusal as a GraphQL error."""
    held: Message | None = None

    async def sending(message: Message) -> None:
        nonlocal held
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers") or [])
            if 400 <= message["status"] < 500 and headers.get(b"content-type", b"").startswith(b"text/plain"):
                held = message
                return
        elif message["type"] == "http.response.body" and held is not None:
            text = message.get("body", b"").decode("utf-8", "replace").strip() or "bad request"
            status, held = held["status"], None
            await _answer(send, status, error_body("BAD_REQUEST", text[:500]))
            return
        await send(message)

    return sending


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
