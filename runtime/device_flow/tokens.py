"""A device flow's tokens: what a token endpoint's answer means (RFC 8628 §3.5, pure, so
the table is tested alone), and the use of a stored token by a model call, refreshed
(RFC 6749 §6) when it is near expiry."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import time
from pathlib import Path
from typing import Any, BinaryIO, Literal

import httpx

from runtime.device_flow.credentials import credentials_record, read_credentials, store_credentials
from runtime.device_flow.providers import DeviceFlowProvider, credentials_path
from runtime.egress_client import egress_client
from runtime.settings import Settings

Meaning = Literal["authorized", "pending", "slow_down", "failed", "retry"]

# §3.5 error codes that end the flow, as the spec's errorKind.
TERMINAL_ERRORS = {
    "access_denied": "access_denied",
    "expired_token": "expired_token",
    "invalid_grant": "invalid_grant",
}


def token_response_meaning(status: int, body: Any) -> tuple[Meaning, str | None]:
    """(meaning, errorKind) of one token response.

    200 with an `access_token` is an approval. `authorization_pending` keeps polling,
    `slow_down` (the RFC's 400, or the 429 some IdPs send) adds 5 s to the interval, the
    RFC's terminal errors end the flow with their name. A 5xx is retried; anything else
    is `upstream_error`.
    """
    error = body.get("error") if isinstance(body, dict) else None
    if status == 200 and isinstance(body, dict) and isinstance(body.get("access_token"), str):
        return "authorized", None
    if status == 429 or error == "slow_down":
        return "slow_down", None
    if error == "authorization_pending":
        return "pending", None
    if isinstance(error, str) and error in TERMINAL_ERRORS:
        return "failed", TERMINAL_ERRORS[error]
    if status >= 500:
        return "retry", None
    return "failed", "upstream_error"


# --- Using a stored token: the `deviceFlow` credential of a model provider (issue 11) -----

REFRESH_TOKEN_GRANT = "refresh_token"
# A token this close to its expiry is refreshed before use: a model call can outlast a
# few seconds, and a token that dies in the middle of a streamed reply is a lost attempt.
REFRESH_MARGIN_MS = 120_000
REFRESH_TIMEOUT = httpx.Timeout(20.0)

log = logging.getLogger(__name__)

# One refresh at a time per credentials file: in this process (an asyncio lock), and
# across the daemon's processes (a file lock), since a rotating IdP consumes the
# refresh token on first use and a second concurrent refresh would get invalid_grant.
_LOCKS: dict[tuple[int, Path], asyncio.Lock] = {}


def _lock(path: Path) -> asyncio.Lock:
    """The in-process lock of a credentials file (per event loop: a lock serves one)."""
    return _LOCKS.setdefault((id(asyncio.get_running_loop()), path), asyncio.Lock())


def _usable(record: dict[str, Any], now_ms: int) -> bool:
    expiry = record.get("expiry_date")
    return not isinstance(expiry, int | float) or now_ms + REFRESH_MARGIN_MS < expiry


def _unexpired(record: dict[str, Any], now_ms: int) -> bool:
    expiry = record.get("expiry_date")
    return not isinstance(expiry, int | float) or now_ms < expiry


async def usable_token(data_dir: Path, settings: Settings, provider_id: str) -> str | None:
    """The access token of the device-flow provider `provider_id`, refreshed first when it
    is near expiry; None when there is none a model call can use (then the caller runs
    the provider's device flow).

    The refresh is RFC 6749 §6 (`grant_type=refresh_token`) against the provider's token
    endpoint, and idempotent: under the lock the stored credentials are read again, so a
    caller that waited behind another's refresh uses its token instead of spending the
    (possibly rotated) refresh token a second time. An IdP that cannot be reached or
    answers 5xx leaves the stored token in use while it has not expired; an IdP that
    refuses the refresh token (invalid_grant) makes it unusable, so the next call asks
    for a device flow rather than the same refusal again.
    """
    record = await asyncio.to_thread(read_credentials, data_dir, provider_id)
    if record is None:
        return None
    if _usable(record, _now_ms()):
        return str(record["access_token"])
    provider = settings.device_flow_provider_map.get(provider_id)
    if provider is None or not record.get("refresh_token"):
        return str(record["access_token"]) if _unexpired(record, _now_ms()) else None
    path = credentials_path(data_dir, provider_id)
    lock = _lock(path)
    async with lock:
        lock_file = await asyncio.to_thread(_lock_file, path)
        try:
            return await _refresh_locked(data_dir, provider)
        finally:
            await asyncio.to_thread(lock_file.close)


def _lock_file(path: Path) -> BinaryIO:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle = open(path.with_suffix(".lock"), "ab")  # closed by the caller
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    return handle


async def _refresh_locked(data_dir: Path, provider: DeviceFlowProvider) -> str | None:
    """The refresh itself; the caller holds both locks."""
    provider_id = provider.provider_id
    record = await asyncio.to_thread(read_credentials, data_dir, provider_id)
    if record is None:
        return None
    if _usable(record, _now_ms()):
        return str(record["access_token"])  # refreshed by whoever held the lock before
    refresh_token = record.get("refresh_token")
    if not isinstance(refresh_token, str) or not refresh_token:
        return str(record["access_token"]) if _unexpired(record, _now_ms()) else None
    form = {
        "grant_type": REFRESH_TOKEN_GRANT,
        "refresh_token": refresh_token,
        "client_id": provider.client_id,
    }
    try:
        async with egress_client(timeout=REFRESH_TIMEOUT) as http:
            response = await http.post(
                provider.token_endpoint, data=form, headers={"Accept": "application/json"}
            )
    except httpx.HTTPError as err:
        log.warning("refresh of %s failed (%s)", provider_id, type(err).__name__)
        return str(record["access_token"]) if _unexpired(record, _now_ms()) else None
    body: Any
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code == 200 and isinstance(body, dict):
        if isinstance(body.get("access_token"), str):
            fresh = credentials_record(provider_id, body, _now_ms(), refresh_token=refresh_token)
            try:
                await asyncio.to_thread(store_credentials, data_dir, provider_id, fresh)
            except OSError as err:
                # The new token works for this call; the next one refreshes again.
                log.warning("refreshed credentials of %s not stored (%s)", provider_id, err)
            return str(fresh["access_token"])
    if response.status_code >= 500 or response.status_code == 429:
        log.warning("refresh of %s: HTTP %s", provider_id, response.status_code)
        return str(record["access_token"]) if _unexpired(record, _now_ms()) else None
    # Refused (invalid_grant: revoked or already used): the refresh token is dead.
    error = body.get("error") if isinstance(body, dict) else None
    log.warning("refresh of %s refused: HTTP %s %s", provider_id, response.status_code, error)
    dead = {k: v for k, v in record.items() if k != "refresh_token"}
    with contextlib.suppress(OSError):
        await asyncio.to_thread(store_credentials, data_dir, provider_id, dead)
    return str(record["access_token"]) if _unexpired(record, _now_ms()) else None


async def forget_token(data_dir: Path, provider_id: str, access_token: str) -> bool:
    """The model provider refused `access_token` (401/403): drop it, so the next call with
    this credential refreshes or runs the device flow instead of being refused again.
    Only that token is dropped (a newer one stored meanwhile stays); returns whether it
    was."""
    path = credentials_path(data_dir, provider_id)
    lock = _lock(path)
    async with lock:
        lock_file = await asyncio.to_thread(_lock_file, path)
        try:
            record = await asyncio.to_thread(read_credentials, data_dir, provider_id)
            if record is None or record.get("access_token") != access_token:
                return False
            # Expired now: a refresh token, if any, gets the next call a fresh one.
            expired = {**record, "expiry_date": 0}
            await asyncio.to_thread(store_credentials, data_dir, provider_id, expired)
            return True
        finally:
            await asyncio.to_thread(lock_file.close)


def _now_ms() -> int:
    return int(time.time() * 1000)
