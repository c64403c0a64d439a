"""Error responses in the spec's shapes (`{"error": ..., "code": ...}`), not FastAPI's `detail`.

Three layers, innermost first: `ApiError` raised by routes; Temporal's errors, mapped
here once for every route — RPC errors by `rpc_error` (Temporal or the worker not
answering is a 503 with `Retry-After`, never a 500), a workflow's or validator's typed
refusal by `workflow_error`; and `LastResort`, which answers anything else with the
spec's 5xx shape as an ordinary response, so the kept-alive connection stays open.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from temporalio.client import (
    RPCTimeoutOrCancelledError,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from runtime.failures import (
    InvalidRequest,
    WireError,
    WorkerUnavailable,
    decode_failure,
)

log = logging.getLogger(__name__)

# A body that is not JSON: the spec's 400 has no `code`.
MALFORMED_JSON = InvalidRequest(message="Invalid JSON in request body")
INVALID_JSON = MALFORMED_JSON.response_body()  # its body, as clients read it
NOT_AN_OBJECT = "Request body must be a JSON object (Content-Type: application/json)"
# The spec's 5xx shape (JSON-RPC style): `{"error": "Internal error", "code": -32000, "data"}`.
INTERNAL_ERROR_CODE = -32000


class ApiError(Exception):
    """Raise from a route to answer `status` with exactly `body` (and `headers`).

    `failure` is the typed refusal it answers, when a workflow sent one: a route that
    must do more for one kind (a late vote is announced) tests its type, not the text.
    """

    def __init__(
        self,
        status: int,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
        *,
        failure: WireError | None = None,
    ) -> None:
        super().__init__(body.get("error", status))
        self.status = status
        self.body = dict(body)
        self.headers = dict(headers or {})
        self.failure = failure

    @classmethod
    def of(cls, failure: WireError) -> ApiError:
        """The HTTP answer a typed refusal defines for itself."""
        return cls(
            failure.http_status,
            failure.response_body(),
            failure.response_headers(),
            failure=failure,
        )

    @classmethod
    def carried_by(cls, err: ApplicationError) -> ApiError:
        """The HTTP answer of the typed refusal `err` carries (what the app's handler
        answers), for a route that must look at a refusal before it goes out.

        Raises:
            ApplicationError: `err` itself, when it carries no refusal (a bug).
        """
        failure = decode_failure(err)
        if failure is None:
            raise err
        return cls.of(failure)


def worker_unavailable() -> ApiError:
    """A workflow query or update that no worker answered within the API's bound."""
    return ApiError.of(WorkerUnavailable())


def temporal_unavailable(detail: str = "Temporal is not reachable") -> ApiError:
    """Temporal itself did not answer (down, restarting, or shedding load)."""
    return ApiError(503, {"error": detail, "code": "temporal_unavailable"}, {"Retry-After": "5"})


def internal_error(reason: str, **data: Any) -> dict[str, Any]:
    """The body of a 500: a short reason, never an exception's text."""
    return {
        "error": "Internal error",
        "code": INTERNAL_ERROR_CODE,
        "data": {"reason": reason, **data},
    }


def rpc_error(err: RPCError | RPCTimeoutOrCancelledError) -> ApiError:
    """A Temporal RPC error that reached a route, as the HTTP answer it deserves."""
    if isinstance(err, RPCTimeoutOrCancelledError):
        return worker_unavailable()
    status = err.status
    if status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.RESOURCE_EXHAUSTED):
        return temporal_unavailable()
    if status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
        return worker_unavailable()
    if status == RPCStatusCode.NOT_FOUND:
        return ApiError(
            404,
            {"error": "The workflow behind this resource is gone", "code": "workflow_not_found"},
        )
    if status in (RPCStatusCode.ALREADY_EXISTS, RPCStatusCode.FAILED_PRECONDITION):
        return ApiError(
            409,
            {"error": "Temporal refused the operation in its current state", "code": "conflict"},
        )
    return ApiError(500, internal_error(f"temporal_{status.name.lower()}"))


def workflow_error(err: WorkflowUpdateFailedError | WorkflowFailureError) -> ApiError:
    """A failed update (refused by its validator, or failed in its handler) or workflow,
    as HTTP: the one place where a failure from across Temporal becomes an answer.

    A typed failure (`runtime.failures`) answers its own status, body and headers (an
    `UpdateExpired`, the validator's refusal of an update its sender stopped waiting for,
    is a worker that did not answer in time). Anything untyped is a 409 with its message.
    """
    cause = err.cause
    failure = decode_failure(cause)
    if failure is not None:
        return ApiError.of(failure)
    return ApiError(409, {"error": str(getattr(cause, "message", "") or err)})


def json_error(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(dict(body), status_code=status, headers=dict(headers or {}))


async def _api_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return json_error(exc.status, exc.body, exc.headers)


async def _rpc_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RPCError | RPCTimeoutOrCancelledError)
    error = rpc_error(exc)
    if isinstance(exc, RPCError) and exc.status == RPCStatusCode.UNAVAILABLE:
        # Until Temporal answers its health check again, routes get a fast 503
        # instead of each waiting out the client's own retries (api.temporal).
        connector = getattr(request.app.state, "temporal", None)
        if connector is not None:
            connector.mark_down()
    if error.status >= 500 and error.status != 503:
        log.error("Temporal RPC error %s", exc.__class__.__name__, exc_info=exc)
    return json_error(error.status, error.body, error.headers)


async def _validation_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(err.get("type") == "json_invalid" for err in errors):
        return _invalid(MALFORMED_JSON)
    first = errors[0] if errors else {}
    if tuple(first.get("loc", ())) == ("body",) and first.get("type") == "model_attributes_type":
        # Not a JSON object: an array, a string, or a form body sent without
        # `Content-Type: application/json` (curl's -d default), which FastAPI leaves unparsed.
        return _invalid(InvalidRequest(message=NOT_AN_OBJECT, code="invalid_request"))
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    message = first.get("msg", "Invalid request")
    text = f"{where}: {message}" if where else message
    return _invalid(InvalidRequest(message=text, code="invalid_request"))


def _invalid(refusal: InvalidRequest) -> Response:
    return json_error(refusal.http_status, refusal.response_body())


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        body = {"error": f"Cannot {request.method} {request.url.path}"}
    elif exc.status_code == 405:
        body = {"error": f"Method {request.method} not allowed on {request.url.path}"}
    else:
        body = {"error": str(exc.detail)}
    return json_error(exc.status_code, body, exc.headers)


async def _refusal(_request: Request, exc: Exception) -> Response:
    """A typed refusal raised by the store side (`WireError.application_error()`, the
    one idiom) answers its own status, body and headers; anything untyped is a bug."""
    assert isinstance(exc, ApplicationError)
    answer = ApiError.carried_by(exc)
    return json_error(answer.status, answer.body, answer.headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(ApplicationError, _refusal)
    app.add_exception_handler(RPCError, _rpc_error)
    app.add_exception_handler(RPCTimeoutOrCancelledError, _rpc_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)


class LastResort:
    """Answer an unhandled exception with the spec's 500 shape, as a normal response.

    Starlette's own last resort (ServerErrorMiddleware) re-raises after answering,
    and the server then closes the kept-alive connection; this middleware sits inside
    the security chain, so the 500 is an ordinary response (with CORS headers) and
    the connection is reused. The traceback is logged under an incident id that the
    body carries; the exception's text never leaves the process. A failure after the
    response started (a stream) cannot be answered any more and is re-raised.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:
                raise
            incident = uuid.uuid4().hex[:16]
            log.error(
                "incident %s: %s %s failed",
                incident,
                scope.get("method"),
                scope.get("path"),
                exc_info=exc,
            )
            response = json_error(500, internal_error(type(exc).__name__, incidentId=incident))
            await response(scope, receive, send)
