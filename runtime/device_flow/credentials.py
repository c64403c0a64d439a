"""A provider's stored credentials on the daemon's disk (`credentials/{providerId}.json`,
0600): what a device flow's approval wrote, and what a refresh replaces.

The record keeps the token endpoint's names (`access_token`, `refresh_token`, ...) plus
`expiry_date` (epoch ms, absent when the IdP gave no `expires_in`) and `obtainedAt`.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from runtime.device_flow.providers import credentials_path

log = logging.getLogger(__name__)


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, mode 0600, atomically (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def credentials_record(
    provider_id: str, body: dict[str, Any], now_ms: int, *, refresh_token: str | None = None
) -> dict[str, Any]:
    """What a token endpoint's success answer is stored as. A refresh answer that does not
    rotate the refresh token keeps the one it was made with (`refresh_token`)."""
    expires_at = None
    if isinstance(body.get("expires_in"), int | float):
        expires_at = now_ms + int(body["expires_in"] * 1000)
    record = {
        "providerId": provider_id,
        "access_token": body["access_token"],
        "refresh_token": body.get("refresh_token") or refresh_token,
        "token_type": body.get("token_type"),
        "scope": body.get("scope"),
        "resource_url": body.get("resource_url"),
        "id_token": body.get("id_token"),
        "expiry_date": expires_at,
        "obtainedAt": now_ms,
    }
    return {k: v for k, v in record.items() if v is not None}


def store_credentials(data_dir: Path, provider_id: str, record: dict[str, Any]) -> None:
    """Raises OSError: the disk refused the write (EACCES, EROFS, ENOSPC)."""
    payload = json.dumps(record, indent=2).encode("utf-8")
    write_private(credentials_path(data_dir, provider_id), payload)


def read_credentials(data_dir: Path, provider_id: str) -> dict[str, Any] | None:
    """The provider's stored credentials, or None when there are none (or none readable)."""
    path = credentials_path(data_dir, provider_id)
    try:
        stored = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        log.warning("credentials of %s unreadable (%s); treated as absent", provider_id, err)
        return None
    if not isinstance(stored, dict) or not isinstance(stored.get("access_token"), str):
        return None
    return stored
