"""Keep /openapi.json true: the error responses each route can send, and the JSON bodies
that routes validate themselves (`read_body`, then the model's `parse`), declared with
the helpers below.

Routes declare what they themselves answer (`responses=errors(400, 404, 503)`); the
statuses of the security chain (api/security: 401, 403, 413, 429) and the last-resort
500 apply to every route behind it and are added here, once, by `install_openapi`.
FastAPI's default 422 is removed: this app answers validation errors with 400.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel
from starlette.responses import Response

ERROR_REF = {"$ref": "#/components/schemas/Error"}

# The bodies of the spec's errors: `{"error": ..., "code": ..., <details>}`.
SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": {
        "title": "Error",
        "type": "object",
        "description": 'Every error body: `{"error": message, "code": ..., ...details}`. The '
        'spec\'s 5xx shape is `{"error": "Internal error", "code": -32000, "data": {...}}`.',
        "required": ["error"],
        "properties": {
            "error": {"type": "string"},
            "code": {"type": ["string", "integer"]},
        },
        "additionalProperties": True,
    },
}

RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying.",
        "required": True,
        "schema": {"type": "string"},
    }
}

DESCRIPTIONS: dict[int, str] = {
    400: 'Bad request: malformed or non-standard JSON (`{"error": "Invalid JSON in request '
    'body"}`), or a field or parameter out of bounds (`{"error", "code"}`).',
    401: 'No or a wrong bearer token (`{"error": "Unauthorized"}`), or a strict mutation '
    "route on a daemon without a configured token (`token_required`).",
    403: "Refused by the Host allowlist or the CORS policy, or by the route's own guard.",
    404: "No such resource (or no route matches the decoded path).",
    409: "The resource is not in a state that allows this.",
    413: "The request body is larger than the daemon's limit (`payload_too_large`), or a "
    "file is too large for a text read (`file_too_large`).",
    422: "The request is well formed but cannot apply to the target (`binary_file`, "
    "`text_not_found`, `ambiguous_text_match`).",
    429: "Rate limit reached (`rate_limit_exceeded`, `subscriber_limit_exceeded`).",
    500: 'Internal error (`{"error": "Internal error", "code": -32000, "data": {...}}`).',
    501: "Not implemented by this daemon.",
    502: "An upstream service (an identity provider) answered with an error (`upstream_error`).",
    503: "Temporal, a worker or a capacity limit did not allow it now (`temporal_unavailable`, "
    "`worker_unavailable`, ...); retry after `Retry-After`.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route decorator: the error statuses the route itself answers."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        response: dict[str, Any] = {
            "description": DESCRIPTIONS[status],
            "content": {"application/json": {"schema": ERROR_REF}},
        }
        if status in (429, 503):
            response["headers"] = RETRY_AFTER
        responses[status] = response
    return responses


def json_body(model: type[BaseModel], *, required: bool = True) -> dict[str, Any]:
    """`openapi_extra=` for a route that validates its JSON body itself (`read_body` and
    `model.parse`, api/sessions/bodies.py)."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in schema.pop("$defs", {}).items():
        SCHEMAS.setdefault(name, definition)
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": schema}},
        }
    }


def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    """`openapi_extra=` parameters for a query value a route reads itself."""
    parameter = {"name": name, "in": "query", "schema": schema, "description": description}
    return {"parameters": [parameter]}


class EventStream(Response):
    """`response_class=` for documentation: the route answers `text/event-stream`."""

    media_type = "text/event-stream"


# -- what the security chain (api/security) adds to every route -----------------------------

_NO_RATE_LIMIT = {("get", "/health"), ("get", "/session/{session_id}/events")}
_BODY_METHODS = {"post", "put", "patch", "delete"}


def _chain_statuses(method: str, path: str) -> Iterable[int]:
    yield 401  # BearerAuth (and the strict-mutation guard)
    yield 403  # HostAllowlist, CorsPolicy
    if "{" in path:
        yield 404  # the router: a decoded parameter (`/`, a newline) no route matches
    if method in _BODY_METHODS:
        yield 413  # BodyLimit
    if (method, path) not in _NO_RATE_LIMIT:
        yield 429  # RateLimit (`--rate-limit`)
    yield 500  # api.errors.LastResort


def complete(document: dict[str, Any]) -> dict[str, Any]:
    """Add the chain's statuses to every operation, drop FastAPI's default 422 (a route's
    own declared 422 stays), register the error schemas."""
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            if _is_fastapi_422(responses.get("422")):
                responses.pop("422")
            for status, response in errors(*_chain_statuses(method, path)).items():
                responses.setdefault(str(status), response)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas.update(SCHEMAS)
    return document


def _is_fastapi_422(response: Any) -> bool:
    if not isinstance(response, dict):
        return False
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return bool(schema.get("$ref", "").endswith("/HTTPValidationError"))


def install_openapi(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
