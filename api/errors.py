"""Error responses in the spec's shapes (`{"error": ..., "code": ...}`), not FastAPI's `detail`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

INVALID_JSON = {"error": "Invalid JSON in request body"}


class ApiError(Exception):
    """Raise from a route to answer `status` with exactly `body` (and `headers`)."""

    def __init__(
        self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(body.get("error", status))
        self.status = status
        self.body = dict(body)
        self.headers = dict(headers or {})


def worker_unavailable() -> ApiError:
    """A workflow query or update that no worker answered within the API's bound."""
    return ApiError(
        503,
        {"error": "No worker answered in time", "code": "worker_unavailable"},
        {"Retry-After": "5"},
    )


def temporal_unavailable(detail: str = "Temporal is not reachable") -> ApiError:
    """A call to the Temporal server that failed or did not answer in time."""
    return ApiError(503, {"error": detail, "code": "temporal_unavailable"}, {"Retry-After": "5"})


def json_error(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(dict(body), status_code=status, headers=dict(headers or {}))


async def _api_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return json_error(exc.status, exc.body, exc.headers)


async def _validation_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(err.get("type") == "json_invalid" for err in errors):
        return json_error(400, INVALID_JSON)
    first = errors[0] if errors else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    message = first.get("msg", "Invalid request")
    return json_error(
        400, {"error": f"{where}: {message}" if where else message, "code": "invalid_request"}
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        body = {"error": f"Cannot {request.method} {request.url.path}"}
    elif exc.status_code == 405:
        body = {"error": f"Method {request.method} not allowed on {request.url.path}"}
    else:
        body = {"error": str(exc.detail)}
    return json_error(exc.status_code, body, exc.headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
