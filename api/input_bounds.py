"""Bounds on what a client may send, checked at the edge (before anything reaches
Temporal or the store), and the one strict JSON parser every request body goes through.

Strict JSON is RFC 8259 JSON: no `NaN`, `Infinity` or `-Infinity` (Python's `json`
accepts them, the spec's JSON.parse does not), nesting at most `MAX_JSON_DEPTH`
deep (a deeper body would exhaust the interpreter's recursion on its way through
pydantic, the journal or Temporal's converter), and no lone UTF-16 surrogates in
strings (they cannot be stored or encoded as UTF-8). Anything else answers
`400 {"error": "Invalid JSON in request body"}`, like any malformed body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

# Containers nested deeper than this are refused (content blocks need about five).
MAX_JSON_DEPTH = 64
# Identifiers and short labels a client names: a model id, a permission option id.
MAX_ID_CHARS = 256
# A session's display name (the store's column).
MAX_DISPLAY_NAME_CHARS = 500
# An absolute path a client names (`cwd`): Linux's PATH_MAX.
MAX_PATH_CHARS = 4096
# A journal sequence number (a cursor): the store's BIGINT.
MAX_SEQUENCE = 2**63 - 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _too_deep(value: Any) -> bool:
    """Whether `value` nests containers deeper than MAX_JSON_DEPTH (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _has_lone_surrogate(value: Any) -> bool:
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def strict_json_loads(raw: bytes | str) -> Any:
    """Parse strict JSON; raises `json.JSONDecodeError` for anything that is not."""
    text = raw if isinstance(raw, str) else None
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as err:  # NaN, bad UTF-8, nesting past the C stack
        raise json.JSONDecodeError(str(err) or type(err).__name__, text or "", 0) from err
    if _too_deep(value):
        raise json.JSONDecodeError(f"nested deeper than {MAX_JSON_DEPTH}", text or "", 0)
    if _has_lone_surrogate(value):
        raise json.JSONDecodeError("lone surrogate in a string", text or "", 0)
    return value


class StrictJsonRequest(Request):
    """A request whose `json()` is `strict_json_loads` (what FastAPI parses bodies with)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json_loads(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    """Routes whose pydantic body models are fed by the strict parser.

    `json.JSONDecodeError` becomes FastAPI's `json_invalid` validation error, which
    `api.errors` answers with the spec's `Invalid JSON in request body`.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict_handler
