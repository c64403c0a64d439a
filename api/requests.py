"""What a route reads of its request beyond its declared parameters: the JSON object body
(strictly parsed, for the routes that check their bodies themselves), the client id a
session-daemon client names itself by (`X-Qwen-Client-Id`), and whether the caller is on
this machine."""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Self

from fastapi import Request
from pydantic import ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from api.errors import MALFORMED_JSON, ApiError
from api.input_bounds import strict_json_loads
from runtime.failures import InvalidRequest, WireError
from runtime.wire import WireBody

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
        raise ApiError.of(MALFORMED_JSON) from err
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


class DaemonBody(WireBody):
    """A JSON body of the session-daemon protocol: strict types, unknown fields ignored,
    and `parse` answers the route's own 400 (`refusal`), never pydantic's messages. A
    route reads the object with `read_body` first."""

    # Strict: `"5"` is not a number and `true` not an integer, as the spec's daemon says.
    # An unknown field is not refused (the spec's daemon ignores it), unlike WireBody's.
    model_config = ConfigDict(extra="allow", strict=True)

    @classmethod
    def refusal(cls, error: ErrorDetails) -> WireError:
        """The route's 400 for `error`, the first field that failed validation."""
        raise NotImplementedError

    @classmethod
    def parse(cls, body: dict[str, Any], context: dict[str, Any] | None = None) -> Self:
        """Validate a JSON object (`read_body`); the route's own 400 when it is not valid."""
        try:
            return cls.model_validate(body, context=context)
        except ValidationError as err:
            raise ApiError.of(cls.refusal(err.errors()[0])) from err
