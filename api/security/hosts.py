"""Host allowlist: the DNS-rebinding guard of loopback binds."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from api.security.asgi import header, is_http, send_json

DENIED = {"error": "Request denied: Host header not allowed", "code": "host_not_allowed"}


def loopback_hosts(port: int) -> set[str]:
    names = ("127.0.0.1", "localhost", "[::1]", "host.docker.internal")
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:
        hosts |= set(names)
    return hosts


class HostAllowlist:
    """On a loopback bind only Host values naming this daemon pass (403 otherwise).

    A page on an attacker's domain that rebinds to 127.0.0.1 sends its own name
    as Host, so it stops here even before the bearer check. Non-loopback binds
    already demand a bearer on every route; there `allowed` is None (any Host)
    unless the operator listed the names (`AGENTRT_ALLOWED_HOSTS`).
    """

    def __init__(self, app: ASGIApp, *, allowed: Iterable[str] | None) -> None:
        self.app = app
        self.allowed = None if allowed is None else {h.lower() for h in allowed}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allowed is not None and is_http(scope):
            host = (header(scope, b"host") or "").lower()
            if host not in self.allowed:
                await send_json(send, 403, DENIED)
                return
        await self.app(scope, receive, send)
