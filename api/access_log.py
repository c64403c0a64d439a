"""One access-log line per request, at INFO on the `agentrt.access` logger.

`GET /session/3f…/events?maxQueued 200 41.2 ms`: method, path, the *names* of the
query parameters (never their values: a query string may carry a token or a code),
the status (or `-` when the client went away before one was sent) and the time to
the end of the response (for an SSE stream, its whole life). Headers are never
logged, so neither is a bearer token or a cookie.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("agentrt.access")


def loggable_target(path: str, query_string: bytes) -> str:
    """The path, then the query's parameter names without their values."""
    if not query_string:
        return path
    names = [name for name, _ in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)]
    return f"{path}?{'&'.join(dict.fromkeys(names))}" if names else path


class AccessLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None

        async def send_recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        finally:
            log.info(
                "%s %s %s %.1f ms",
                scope["method"],
                loggable_target(scope["path"], scope.get("query_string", b"")),
                status if status is not None else "-",
                (time.perf_counter() - started) * 1000,
            )
