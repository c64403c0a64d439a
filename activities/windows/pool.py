"""The Windows pool client (protocol version 1, README "Windows machine pool"): each pool
call is one activity, called by name (`WindowsPoolActivity`).

Every failure is raised as a `WindowsError` (`map_pool_error`), non-retryable for
Temporal except the pool's transient failures of the idempotent calls (renew, close): no
HTTP answer is POOL_UNAVAILABLE, a refusal maps to its code, and on a call that carried a
secret the pool's body is projected before it leaves this module. A screenshot's image
is stored in the journal (`windows-screenshots/<tenant>/<holder>`, the last
`SCREENSHOT_RETENTION` per holder) and the verb answers a reference to it, so images never
cross Temporal.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

import httpx

from runtime.egress import url_refusal
from runtime.egress_client import EgressTransport
from runtime.settings import Settings
from runtime.store import EventJournal
from runtime.streams import windows_screenshot_stream
from runtime.windows.contracts import (
    CallVerbInput,
    CallVerbResult,
    CloseSessionInput,
    CloseSessionResult,
    OpenSessionInput,
    PoolSession,
    ReleaseResult,
    RenewInput,
    RenewResult,
    ScreenshotResult,
    WindowsPoolActivityContracts,
)
from runtime.windows.errors import (
    WindowsError,
    WindowsErrorCode,
    WindowsErrorData,
    map_pool_error,
)
from runtime.windows.screenshots import read_screenshot
from runtime.windows.verbs import (
    SESSION_CALL_TIMEOUT,
    WindowsVerb,
    carries_secret,
    http_timeout,
    pool_request,
)

SCREENSHOT_EVENT = "windows.screenshot"
SCREENSHOT_RETENTION = 20
# A pool's body kept in poolDetail when it is not JSON: enough to diagnose, bounded.
_TEXT_DETAIL_LIMIT = 2000


class PoolAnswer:
    """A pool's HTTP answer: status and body (JSON when it is, else its text)."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def _body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text[:_TEXT_DETAIL_LIMIT]


class WindowsPoolClient:
    """HTTP to the pool with agentrt's bearer token; one connection pool per process.

    The pool's URL follows the egress rule (refused at start-up, and here before the token
    is sent): every connection is checked where it is made (`runtime.egress_client`).
    """

    def __init__(
        self, base_url: str | None, token: str | None, *, transport: httpx.AsyncBaseTransport | None
    ) -> None:
        self._base_url = base_url.rstrip("/") if base_url else None
        self._refusal = url_refusal(base_url, "AGENTRT_WINDOWS_POOL_URL") if base_url else None
        self._token = token
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        # Created on first use, inside the worker's event loop that uses it.
        if self._client is None:
            headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
            self._client = httpx.AsyncClient(
                base_url=self._base_url or "",
                headers=headers,
                transport=self._transport or EgressTransport(limits=limits),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None,
        timeout_s: float,
        carried_secret: bool = False,
        host: str | None = None,
        idempotent: bool = False,
    ) -> PoolAnswer:
        """The pool's answer, or a POOL_UNAVAILABLE `WindowsError` raised when there is none
        (unreachable, not configured, or past agentrt's HTTP timeout)."""
        if self._base_url is None:
            raise map_pool_error(
                None,
                {"error": "not_configured", "reason": "AGENTRT_WINDOWS_POOL_URL is not set"},
                carried_secret=carried_secret,
                host=host,
            ).application_error(retryable=idempotent)
        if self._refusal is not None:
            raise map_pool_error(
                None,
                {"error": "egress_refused", "reason": self._refusal.message},
                carried_secret=carried_secret,
                host=host,
            ).application_error(retryable=False)
        try:
            response = await self._http().request(
                method, path, json=json, timeout=httpx.Timeout(timeout_s)
            )
        except httpx.TransportError as err:
            detail = {"error": type(err).__name__, "reason": str(err) or type(err).__name__}
            raise map_pool_error(
                None, detail, carried_secret=carried_secret, host=host
            ).application_error(retryable=idempotent) from None
        return PoolAnswer(response.status_code, _body(response))


def _fail(
    answer: PoolAnswer,
    *,
    carried_secret: bool = False,
    host: str | None = None,
    idempotent: bool = False,
) -> Any:
    raise map_pool_error(
        answer.status, answer.body, carried_secret=carried_secret, host=host
    ).application_error(retryable=idempotent)


def _malformed(what: str, status: int, body: Any) -> WindowsError:
    """A 2xx the protocol does not allow: the pool failed (POOL_ERROR), with its status."""
    return WindowsError(
        code=WindowsErrorCode.POOL_ERROR,
        message=f"the Windows pool answered outside protocol version 1 ({what})",
        data=WindowsErrorData(httpStatus=status, retryable=False, poolDetail=body),
    )


def _parse_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("expiresAt is not a string")
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def screenshot_ref(stream: str, seq: int) -> str:
    return f"{stream}#{seq}"


class WindowsPoolActivities:
    def __init__(
        self,
        settings: Settings,
        journal: EventJournal,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._journal = journal
        self.client = WindowsPoolClient(
            settings.windows_pool_url, settings.windows_pool_token, transport=transport
        )

    @WindowsPoolActivityContracts.OPEN_SESSION.defn
    async def open_session(self, data: OpenSessionInput) -> PoolSession:
        """POST /v1/sessions: lease a machine for `holder` (201), or the pool's refusal
        (503 saturated: POOL_ERROR whose poolDetail names the current holders)."""
        body = {"tenant": data.tenant, "holder": data.holder, "leaseMs": data.lease_ms}
        answer = await self.client.request(
            "POST", "/v1/sessions", json=body, timeout_s=SESSION_CALL_TIMEOUT.total_seconds()
        )
        if not answer.ok:
            _fail(answer)
        got = answer.body if isinstance(answer.body, dict) else {}
        try:
            return PoolSession(
                session_id=str(got["sessionId"]),
                host=str(got["host"]),
                expires_at=_parse_time(got["expiresAt"]),
                desktop=got.get("desktop", "interactive"),
            )
        except (KeyError, ValueError) as err:
            raise _malformed(
                f"POST /v1/sessions: {err}", answer.status, answer.body
            ).application_error() from None

    @WindowsPoolActivityContracts.RENEW.defn
    async def renew(self, data: RenewInput) -> RenewResult:
        """POST /v1/sessions/{id}/renew; 404 is NOT_FOUND with sessionEvicted."""
        answer = await self.client.request(
            "POST",
            f"/v1/sessions/{data.session_id}/renew",
            json={"leaseMs": data.lease_ms},
            timeout_s=SESSION_CALL_TIMEOUT.total_seconds(),
            idempotent=True,
        )
        if not answer.ok:
            _fail(answer, idempotent=True)
        try:
            return RenewResult(expires_at=_parse_time(dict(answer.body)["expiresAt"]))
        except (KeyError, ValueError, TypeError) as err:
            raise _malformed(
                f"renew: {err}", answer.status, answer.body
            ).application_error() from None

    @WindowsPoolActivityContracts.CLOSE_SESSION.defn
    async def close_session(self, data: CloseSessionInput) -> CloseSessionResult:
        """DELETE /v1/sessions/{id}: 204 closed; 404 the pool no longer knew it."""
        answer = await self.client.request(
            "DELETE",
            f"/v1/sessions/{data.session_id}",
            json=None,
            timeout_s=SESSION_CALL_TIMEOUT.total_seconds(),
            idempotent=True,
        )
        if answer.status == 404:
            return CloseSessionResult(closed=False)
        if not answer.ok:
            _fail(answer, idempotent=True)
        return CloseSessionResult(closed=True)

    @WindowsPoolActivityContracts.CALL_VERB.defn
    async def call_verb(self, data: CallVerbInput) -> CallVerbResult:
        """One verb on a held session; `data.args` went through `validate_and_clamp`."""
        if data.verb is WindowsVerb.RELEASE:
            closed = await self.close_session(CloseSessionInput(session_id=data.session.session_id))
            outcome = ReleaseResult(
                released=closed.closed, outcome="released" if closed.closed else "evicted"
            )
            return CallVerbResult(result=outcome.model_dump())
        secret = carries_secret(data.verb, data.args)
        method, path = pool_request(data.verb, data.session.session_id, data.args)
        body = None if method in ("GET", "DELETE") else data.args
        answer = await self.client.request(
            method,
            path,
            json=body,
            timeout_s=http_timeout(data.verb, data.args).total_seconds(),
            carried_secret=secret,
            host=data.session.host,
        )
        if not answer.ok:
            _fail(answer, carried_secret=secret, host=data.session.host)
        result = answer.body if isinstance(answer.body, dict) else {"value": answer.body}
        if data.verb is WindowsVerb.SCREENSHOT:
            result = await self._store_screenshot(data, result)
        return CallVerbResult(result=result)

    async def _store_screenshot(self, data: CallVerbInput, got: dict[str, Any]) -> dict[str, Any]:
        """Keep the image in the journal; the verb answers its reference."""
        try:
            image = base64.b64decode(str(got["data"]), validate=True)
        except (KeyError, binascii.Error):
            detail = {k: v for k, v in got.items() if k != "data"}
            raise _malformed(
                "screenshot without base64 data", 200, detail
            ).application_error() from None
        stream = windows_screenshot_stream(data.tenant, data.holder)
        mime = str(got.get("mimeType", "image/png"))
        entry = await self._journal.aappend(
            stream,
            SCREENSHOT_EVENT,
            {
                "mimeType": mime,
                "data": base64.b64encode(image).decode("ascii"),
                "width": got.get("width"),
                "height": got.get("height"),
                "hwnd": data.args.get("hwnd"),
                "sessionId": data.session.session_id,
            },
            retention=SCREENSHOT_RETENTION,
        )
        return ScreenshotResult(
            screenshotRef=screenshot_ref(stream, entry.seq),
            mimeType=mime,
            width=got.get("width"),
            height=got.get("height"),
            hwnd=data.args.get("hwnd"),
            bytes=len(image),
        ).model_dump(exclude_none=True)


__all__ = [
    "SCREENSHOT_EVENT",
    "WindowsErrorCode",
    "WindowsPoolActivities",
    "WindowsPoolClient",
    "read_screenshot",
]
