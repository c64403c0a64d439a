"""A `deviceFlow` credential's token: the stored one while it is fresh, refreshed (RFC 6749
§6, against a real IdP on loopback) when it is near expiry, once for concurrent callers,
and None when nothing usable is left (the caller then runs the device flow)."""

from __future__ import annotations

import asyncio
import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.device_flow.credentials import credentials_record, read_credentials, store_credentials
from runtime.device_flow.providers import credentials_path
from runtime.device_flow.tokens import forget_token, usable_token
from runtime.settings import Settings
from tests.fakes.device_idp import FakeIdP

PROVIDER = "test-idp"


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    with FakeIdP() as fake:
        yield fake


def _settings(idp: FakeIdP, data_dir: Path) -> Settings:
    return Settings(
        data_dir=data_dir, device_flow_providers=json.dumps({PROVIDER: idp.provider_config()})
    )


def _seed(idp: FakeIdP, data_dir: Path, *, expires_in: int) -> str:
    """Credentials as an approved flow stores them; returns the access token."""
    idp.token_expires_in = expires_in
    body = idp.issue()
    store_credentials(data_dir, PROVIDER, credentials_record(PROVIDER, body, _now_ms()))
    idp.token_expires_in = 3600
    return str(body["access_token"])


def _now_ms() -> int:
    return int(time.time() * 1000)


async def test_no_credentials_no_token(idp: FakeIdP, tmp_path: Path) -> None:
    assert await usable_token(tmp_path, _settings(idp, tmp_path), PROVIDER) is None
    assert idp.token_requests == []


async def test_a_fresh_token_is_used_as_stored(idp: FakeIdP, tmp_path: Path) -> None:
    token = _seed(idp, tmp_path, expires_in=3600)
    assert await usable_token(tmp_path, _settings(idp, tmp_path), PROVIDER) == token
    assert idp.refreshes() == []


async def test_a_token_near_expiry_is_refreshed_and_stored(idp: FakeIdP, tmp_path: Path) -> None:
    old = _seed(idp, tmp_path, expires_in=30)
    settings = _settings(idp, tmp_path)
    new = await usable_token(tmp_path, settings, PROVIDER)
    assert new is not None and new != old and new == idp.issued[-1]
    (refresh,) = idp.refreshes()
    assert refresh["client_id"] == idp.client_id
    stored = read_credentials(tmp_path, PROVIDER)
    assert stored is not None and stored["access_token"] == new
    assert stored["refresh_token"] in idp.refresh_tokens  # the rotated one
    assert stat.S_IMODE(credentials_path(tmp_path, PROVIDER).stat().st_mode) == 0o600
    assert await usable_token(tmp_path, settings, PROVIDER) == new  # fresh now
    assert len(idp.refreshes()) == 1


async def test_concurrent_callers_refresh_once(idp: FakeIdP, tmp_path: Path) -> None:
    _seed(idp, tmp_path, expires_in=30)
    settings = _settings(idp, tmp_path)
    tokens = await asyncio.gather(*(usable_token(tmp_path, settings, PROVIDER) for _ in range(5)))
    assert len(set(tokens)) == 1 and tokens[0] == idp.issued[-1]
    assert len(idp.refreshes()) == 1  # a rotated refresh token is spent once


async def test_a_refused_refresh_of_an_expired_token_leaves_none(
    idp: FakeIdP, tmp_path: Path
) -> None:
    _seed(idp, tmp_path, expires_in=-10)
    idp.revoke_refresh_tokens()
    settings = _settings(idp, tmp_path)
    assert await usable_token(tmp_path, settings, PROVIDER) is None
    stored = read_credentials(tmp_path, PROVIDER)
    assert stored is not None and "refresh_token" not in stored
    # The dead refresh token is not offered again.
    assert await usable_token(tmp_path, settings, PROVIDER) is None
    assert len(idp.refreshes()) == 1


async def test_an_unreachable_idp_keeps_an_unexpired_token(idp: FakeIdP, tmp_path: Path) -> None:
    old = _seed(idp, tmp_path, expires_in=30)
    idp.refresh_status = 503
    settings = _settings(idp, tmp_path)
    assert await usable_token(tmp_path, settings, PROVIDER) == old
    stored = read_credentials(tmp_path, PROVIDER)
    assert stored is not None and stored.get("refresh_token")  # kept for the next try


async def test_a_refused_token_is_forgotten_then_refreshed(idp: FakeIdP, tmp_path: Path) -> None:
    old = _seed(idp, tmp_path, expires_in=3600)
    settings = _settings(idp, tmp_path)
    assert await forget_token(tmp_path, PROVIDER, "someone-else") is False
    assert await forget_token(tmp_path, PROVIDER, old) is True
    new = await usable_token(tmp_path, settings, PROVIDER)
    assert new is not None and new != old
