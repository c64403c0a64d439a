"""What a route reads of its request beyond its declared parameters: the JSON object body
(strictly parsed, for the routes that check their bodies themselves), the client id a
session-daemon client names itself by (`X-Qwen-Client-Id`), and whether the caller is on
this machine."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from fastapi import Request

from api.errors import INVALID_JSON, ApiError
from api.input_bounds import strict_json_loads
from runtime.failures import InvalidRequest

CLIENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


async def read_body(request: Request) -> dict[str, Any]:
    """The JSON object body; `{}` when empty; 400 for malformed or non-strict JSON
    (`api.input_bounds`) or a non-object."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = strict_json_loads(raw)
    except ValueError as err:
        raise ApiError(400, INVALID_JSON) from err
    if not isinstance(body, dict):
        raise ApiError.of(InvalidRequest(message="Request body must be a JSON object"))
    return body


def client_id_of(request: Request) -> str | None:
    value = request.headers.get("x-qwen-client-id")
    if value is None:
        return None
    if not CLIENT_ID.match(value):
        raise ApiError.of(
            InvalidRequest(message="X-Qwen-Client-Id is malformed", code="invalid_client_id")
        )
    return value


def is_local(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in ("localhost", "testclient")
