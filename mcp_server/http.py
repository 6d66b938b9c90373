"""`kernelindex mcp --http`: the same read-only tools over MCP's streamable HTTP transport (the
SDK's), at `/mcp`, for agents that cannot start a local process.

Every request must carry `Authorization: Bearer <API key>`: a key of the stack's (any scope; the
tools only read), checked by the API itself (`{ viewer { keyId scope } }` through the gateway,
never the database); without one, or with one the API does not accept, the SDK's bearer
middleware answers 401 before any tool runs. An accepted key is remembered for `KEY_TTL_S`
(a revoked key is refused at most that long after), a refused one is asked again next time. The
tools themselves read the API as `kernelindex mcp` does (with --api-key if given: reads are public).
"""

from __future__ import annotations

import hashlib
import sys
import time

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from client.api import ApiClient, ApiError

KEY_TTL_S = 30.0
VIEWER = "query Viewer { viewer { keyId name scope } }"


class ApiKeyVerifier:
    """The SDK's TokenVerifier: a bearer token is one of our API keys when the API says so."""

    def __init__(self, api_url: str, timeout_s: float = 10.0, ttl_s: float = KEY_TTL_S):
        self.api_url, self.timeout_s, self.ttl_s = api_url, timeout_s, ttl_s
        self._accepted: dict[str, tuple[float, AccessToken]] = {}  # sha256(token) -> (until, access)

    async def verify_token(self, token: str) -> AccessToken | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        cached = self._accepted.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        access = await anyio.to_thread.run_sync(self._ask, token)
        if access is None:
            self._accepted.pop(key, None)
        else:
            if len(self._accepted) > 10_000:  # bounded: drop what has expired
                self._accepted = {k: v for k, v in self._accepted.items() if v[0] > now}
            self._accepted[key] = (now + self.ttl_s, access)
        return access

    def _ask(self, token: str) -> AccessToken | None:
        with ApiClient(self.api_url, token, timeout_s=self.timeout_s) as api:
            try:
                viewer = api.query(VIEWER)["viewer"]
            except ApiError as error:
                if "UNAUTHENTICATED" not in error.codes:
                    print(f"kernelindex mcp: could not check a key: {error}", file=sys.stderr, flush=True)
                return None
        if viewer is None:
            return None
        return AccessToken(token=token, client_id=viewer["keyId"], scopes=[viewer["scope"]])


def auth_settings(public_url: str) -> AuthSettings:
    """Bearer keys issued by the stack at `public_url` (`kernelindex keys create`), no OAuth flow."""
    return AuthSettings(issuer_url=public_url, resource_server_url=None, required_scopes=None)
