"""Strip the Origin of same-origin loopback requests (a page the daemon serves calling it)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from api.security.asgi import header, is_http, without_header

LOOPBACK_ORIGIN_HOSTS = ("127.0.0.1", "localhost", "[::1]", "host.docker.internal")


def same_origin_loopback(origin: str, port: int) -> bool:
    """True for http(s)://{127.0.0.1,localhost,[::1],host.docker.internal}:<our port>."""
    origin = origin.lower()
    return any(
        origin == f"{scheme}://{host}:{port}"
        for scheme in ("http", "https")
        for host in LOOPBACK_ORIGIN_HOSTS
    )


class SameOriginStrip:
    """Runs before CORS: such requests pass whatever `--allow-origin` says.

    The stripped value is kept in `scope["state"]["same_origin"]` for routes that
    must still check a browser's Origin themselves (CSRF-protected mutations).
    """

    def __init__(self, app: ASGIApp, *, port: int) -> None:
        self.app = app
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if is_http(scope):
            origin = header(scope, b"origin")
            if origin is not None and same_origin_loopback(origin, self.port):
                scope = without_header(scope, b"origin")
                scope.setdefault("state", {})["same_origin"] = origin
        await self.app(scope, receive, send)
