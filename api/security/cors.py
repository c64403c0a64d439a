"""CORS: a wall by default, an allowlist with `--allow-origin` (spec 002)."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.security.asgi import header, is_http, send_json

DENIED = {"error": "Request denied by CORS policy"}
ALLOW_METHODS = "GET, POST, PATCH, DELETE, OPTIONS"
ALLOW_HEADERS = "Authorization, Content-Type, X-Qwen-Client-Id, Last-Event-ID"
EXPOSE_HEADERS = "Retry-After"


def cors_headers(origin: str) -> list[tuple[str, str]]:
    return [
        ("Access-Control-Allow-Origin", origin),
        ("Vary", "Origin"),
        ("Access-Control-Allow-Methods", ALLOW_METHODS),
        ("Access-Control-Allow-Headers", ALLOW_HEADERS),
        ("Access-Control-Max-Age", "86400"),
        ("Access-Control-Expose-Headers", EXPOSE_HEADERS),
    ]


def origin_allowed(origin: str, patterns: Sequence[str]) -> bool:
    """`Origin: null` never passes, not even under `*`; others match exactly (case-blind)."""
    if origin.strip().lower() == "null":
        return False
    if "*" in patterns:
        return True
    return origin.lower() in {pattern.lower() for pattern in patterns}


class CorsPolicy:
    def __init__(self, app: ASGIApp, *, allow_origin: Sequence[str]) -> None:
        self.app = app
        self.patterns = tuple(allow_origin)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = header(scope, b"origin") if is_http(scope) else None
        if origin is None:
            await self.app(scope, receive, send)
            return
        if not origin_allowed(origin, self.patterns):
            # No Access-Control-* on the way out: it would hint at the allowlist's size.
            await send_json(send, 403, DENIED, [("Vary", "Origin")])
            return
        headers = cors_headers(origin)
        is_preflight = scope["method"] == "OPTIONS" and (
            header(scope, b"access-control-request-method") is not None
            or header(scope, b"access-control-request-headers") is not None
        )
        if is_preflight:
            await send_json(send, 204, None, headers)
            return
        encoded = [(k.lower().encode(), v.encode("latin-1")) for k, v in headers]

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in encoded}
                kept = [(k, v) for k, v in message.get("headers", []) if k not in names]
                message = {**message, "headers": kept + encoded}
            await send(message)

        await self.app(scope, receive, send_with_cors)
