"""Small ASGI helpers shared by the security middlewares."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.types import Scope, Send


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header (name in lower case), decoded as latin-1."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def without_header(scope: Scope, name: bytes) -> Scope:
    scope = dict(scope)
    scope["headers"] = [(k, v) for k, v in scope.get("headers", ()) if k != name]
    return scope


def is_http(scope: Scope) -> bool:
    return bool(scope["type"] == "http")


async def send_json(
    send: Send,
    status: int,
    body: Mapping[str, Any] | None,
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    raw_headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if body is not None:
        raw_headers.append((b"content-type", b"application/json; charset=utf-8"))
    raw_headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload})
