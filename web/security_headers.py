"""Security headers on every response of the web process (pages, static files, errors):

- Content-Security-Policy: scripts, styles, images and connections from this origin only (no
  inline script: pages start their scripts from data attributes; inline styles are allowed for
  GraphiQL's), no plugins, no <base>, forms post here, and no framing (`frame-ancestors 'none'`);
- X-Frame-Options: DENY, for browsers without frame-ancestors;
- X-Content-Type-Options: nosniff (a JSON or text answer is never run as script or style);
- Referrer-Policy: strict-origin-when-cross-origin (a page's path never leaves the site).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"strict-origin-when-cross-origin"),
]
_NAMES = {name for name, _ in HEADERS}


class SecurityHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": [*kept, *HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)
