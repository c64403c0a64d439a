"""The identity provider's side of a device flow (RFC 8628): the device authorization
request, one token poll (which stores the credentials itself, so tokens never cross
Temporal), and the `auth_device_flow_*` events on every session stream of the workspace.

The device code and the PKCE verifier never cross Temporal either (history is plain
text): the device authorization request keeps them on the daemon's disk, 0600, under the
flow id (the workflow's run id), the token poll reads them there, and `forget` deletes
them when the flow ends.

Both requests go through the worker's egress client: an endpoint whose host resolves to a
link-local or metadata address is refused at connect time (`runtime.egress_client`), and
the flow fails with a hint naming the rule.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import secrets
import time
from pathlib import Path
from typing import Any

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from runtime.device_flow import approvals as login_approval
from runtime.device_flow.contracts import (
    DEFAULT_INTERVAL_S,
    DeviceCode,
    DeviceFlowActivityContracts,
    EmitInput,
    ForgetInput,
    PollInput,
    PollOutcome,
    RequestCodeResult,
)
from runtime.device_flow.credentials import credentials_record, store_credentials, write_private
from runtime.device_flow.providers import DeviceFlowProvider, device_flow_secrets_path
from runtime.device_flow.tokens import token_response_meaning
from runtime.egress_client import EgressRefused, egress_client
from runtime.sessions import registry
from runtime.sessions.streams import session_event
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import dedupe_key
from runtime.streams import session_stream

log = logging.getLogger(__name__)

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
HTTP_TIMEOUT = httpx.Timeout(20.0)


def _pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _read_secrets(path: Path) -> dict[str, Any] | None:
    """A flow's stored device authorization, or None if there is none (or it is unreadable
    as one)."""
    try:
        stored = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValueError:
        log.warning("device flow secrets %s are not JSON; ignored", path.name)
        return None
    if not isinstance(stored, dict) or not isinstance(stored.get("device_code"), str):
        return None
    return stored


# A stored code past its expiry by this much is of no use to anyone: swept.
_SWEEP_MARGIN_MS = 60_000


def _sweep_expired(directory: Path, now_ms: int) -> None:
    """Delete the stored codes that expired (a run terminated from outside never ran its
    FORGET); an expired device code cannot get a token any more."""
    try:
        paths = list(directory.glob("*.json"))
    except OSError:
        return
    for path in paths:
        stored = _read_secrets(path)
        try:
            expired = stored is not None and (
                int(stored["obtainedAt"]) + int(stored["expires_in"]) * 1000 + _SWEEP_MARGIN_MS
                < now_ms
            )
        except (KeyError, TypeError, ValueError):
            expired = False
        if expired:
            with contextlib.suppress(OSError):
                path.unlink()


def _public_code(stored: dict[str, Any], now_ms: int) -> DeviceCode:
    """What the workflow may see of a stored device authorization; a retried request
    returns the stored one with the time already spent taken off `expires_in`."""
    elapsed_s = max(now_ms - int(stored["obtainedAt"]), 0) // 1000
    return DeviceCode(
        user_code=stored["user_code"],
        verification_uri=stored["verification_uri"],
        verification_uri_complete=stored.get("verification_uri_complete"),
        expires_in=max(int(stored["expires_in"]) - elapsed_s, 0),
        interval=int(stored["interval"]),
    )


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


class IdentityActivities:
    def __init__(self, store: Store, journal: EventJournal, data_dir: Path) -> None:
        self.store = store
        self.journal = journal
        self.data_dir = data_dir

    @DeviceFlowActivityContracts.REQUEST_CODE.defn
    async def request_code(self, provider: DeviceFlowProvider) -> RequestCodeResult:
        """RFC 8628 §3.1; a refusal of the IdP is a result (`hint`), not a retry.

        The device code and the verifier are stored under the flow id (this run's id) and
        only the user-facing part is returned. A retry after they were stored (a worker
        lost between the write and the completion) returns the stored code instead of
        asking the IdP for a second one."""
        flow_id = activity.info().workflow_run_id
        if not flow_id:
            raise ApplicationError(
                "a device code is requested by a device-flow run", non_retryable=True
            )
        path = device_flow_secrets_path(self.data_dir, flow_id)
        await asyncio.to_thread(_sweep_expired, path.parent, int(time.time() * 1000))
        stored = await asyncio.to_thread(_read_secrets, path)
        if stored is not None:
            try:
                return RequestCodeResult(code=_public_code(stored, int(time.time() * 1000)))
            except (KeyError, TypeError, ValueError):
                log.warning("device flow secrets %s are incomplete; asking again", path.name)
        form = {"client_id": provider.client_id}
        if provider.scope:
            form["scope"] = provider.scope
        verifier: str | None = None
        if provider.pkce:
            verifier, challenge = _pkce_pair()
            form |= {"code_challenge": challenge, "code_challenge_method": "S256"}
        # A client waits on this answer (POST): an IdP that cannot be reached is a 502 now,
        # not retries behind the client's back.
        try:
            async with egress_client(timeout=HTTP_TIMEOUT) as http:
                response = await http.post(
                    provider.device_authorization_endpoint,
                    data=form,
                    headers={"Accept": "application/json"},
                )
        except EgressRefused as err:
            return RequestCodeResult(hint=f"identity provider refused: {err}")
        except httpx.HTTPError as err:
            return RequestCodeResult(hint=f"identity provider unreachable ({type(err).__name__})")
        body = _json(response)
        if response.status_code != 200 or not isinstance(body, dict):
            error = body.get("error") if isinstance(body, dict) else None
            return RequestCodeResult(hint=f"HTTP {response.status_code} {error or ''}".strip())
        try:
            record: dict[str, Any] = {
                "providerId": provider.provider_id,
                "device_code": str(body["device_code"]),
                "code_verifier": verifier,
                "user_code": str(body["user_code"]),
                "verification_uri": body.get("verification_uri") or body["verification_url"],
                "verification_uri_complete": body.get("verification_uri_complete"),
                "expires_in": int(body["expires_in"]),
                "interval": int(body.get("interval") or DEFAULT_INTERVAL_S),
                "obtainedAt": int(time.time() * 1000),
            }
            code = _public_code(record, record["obtainedAt"])
        except (KeyError, TypeError, ValueError):
            return RequestCodeResult(hint="malformed device authorization response")
        try:
            payload = json.dumps(record, indent=2).encode("utf-8")
            await asyncio.to_thread(write_private, path, payload)
        except OSError as err:
            log.warning("device flow %s: device code not stored (%s)", provider.provider_id, err)
            return RequestCodeResult(
                hint=f"could not store the device code ({err.strerror or type(err).__name__})"
            )
        return RequestCodeResult(code=code)

    @DeviceFlowActivityContracts.POLL_TOKEN.defn
    async def poll_token(self, request: PollInput) -> PollOutcome:
        """RFC 8628 §3.4-3.5: one token request. On approval the credentials are written
        here, so the tokens never enter workflow history; a failed write is
        `persist_failed`."""
        provider = request.provider
        path = device_flow_secrets_path(self.data_dir, request.flow_id)
        stored = await asyncio.to_thread(_read_secrets, path)
        if stored is None:
            # Deleted (the flow ended) or lost: this flow cannot get a token any more.
            return PollOutcome(
                outcome="failed",
                error_kind="expired_token",
                hint="the device code is no longer on the daemon's disk",
            )
        form = {
            "grant_type": DEVICE_CODE_GRANT,
            "device_code": stored["device_code"],
            "client_id": provider.client_id,
        }
        if stored.get("code_verifier"):
            form["code_verifier"] = str(stored["code_verifier"])
        try:
            async with egress_client(timeout=HTTP_TIMEOUT) as http:
                response = await http.post(
                    provider.token_endpoint, data=form, headers={"Accept": "application/json"}
                )
        except EgressRefused as err:
            # Not a transient failure: retrying would meet the same rule.
            return PollOutcome(outcome="failed", error_kind="upstream_error", hint=str(err))
        body = _json(response)
        meaning, error_kind = token_response_meaning(response.status_code, body)
        if meaning == "retry":
            raise ApplicationError(f"token endpoint: HTTP {response.status_code}")
        if meaning == "failed":
            hint = None
            if error_kind == "upstream_error":
                hint = f"token endpoint answered HTTP {response.status_code}"
            return PollOutcome(outcome="failed", error_kind=error_kind, hint=hint)
        if meaning != "authorized":
            return PollOutcome(outcome=meaning)
        assert isinstance(body, dict)
        record = credentials_record(provider.provider_id, body, int(time.time() * 1000))
        try:
            await asyncio.to_thread(store_credentials, self.data_dir, provider.provider_id, record)
        except OSError as err:
            log.warning("device flow %s: credentials not stored (%s)", provider.provider_id, err)
            return PollOutcome(
                outcome="failed",
                error_kind="persist_failed",
                hint=f"could not store the credentials ({err.strerror or type(err).__name__})",
            )
        expires_at = record.get("expiry_date")
        return PollOutcome(outcome="authorized", expires_at_ms=expires_at)

    @DeviceFlowActivityContracts.FORGET.defn
    async def forget(self, request: ForgetInput) -> bool:
        """The flow ended (authorized, failed, cancelled): delete its device code and
        verifier. Idempotent; returns whether there was something to delete."""
        path = device_flow_secrets_path(self.data_dir, request.flow_id)

        def unlink() -> bool:
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            return True

        return await asyncio.to_thread(unlink)

    def _record_approval(self, request: EmitInput) -> None:
        with self.store.transaction() as db:
            login_approval.record(
                db.connection(), request.workspace_cwd, request.type, request.data
            )

    @DeviceFlowActivityContracts.EMIT.defn
    async def emit(self, request: EmitInput) -> int:
        """Append the event to each live session of the workspace (or to the one session
        named); a retry appends nothing twice (one dedupe key per stream). Returns how many
        streams got it."""
        if request.session_id is not None:
            session_ids = [request.session_id]
        else:
            live = await asyncio.to_thread(registry.list_live, self.store, request.workspace_cwd)
            session_ids = [record.session_id for record in live]
        if request.session_id is None:  # the flow's own event, not a paused call's echo
            await asyncio.to_thread(self._record_approval, request)
        event = session_event(request.type, request.data)
        for session_id in session_ids:
            key = dedupe_key(request.dedupe_scope, 0, [event])
            await self.journal.aappend_many(
                session_stream(session_id),
                [event],
                retention=request.retention,
                dedupe_key=key,
            )
        return len(session_ids)
