"""A real RFC 8628 identity provider on loopback, driven by the test that runs it.

`FakeIdP` serves the device authorization endpoint (`POST /device/code`, §3.1-3.2)
and the token endpoint (`POST /token`, §3.4-3.5) over real HTTP in a background
thread. The test plays the user: `approve(user_code)` or `deny(user_code)`. It
answers the RFC's error table: `authorization_pending` until the user acts,
`slow_down` (the RFC's 400, or a 429 when `slow_down_status=429`) for the next
`slow_downs` polls, `access_denied`, `expired_token` past `expires_in`, and
`invalid_grant` for a consumed code or a PKCE verifier that does not match.
It also answers RFC 6749 §6 refreshes (`grant_type=refresh_token`), rotating the
refresh token: a used or revoked one is `invalid_grant`. `issued` lists every access
token it gave, in order (a fake model server can accept exactly those).

    with FakeIdP(expires_in=600, interval=1) as idp:
        ...  # point a provider at idp.device_endpoint / idp.token_endpoint
        idp.approve(idp.latest().user_code)
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
REFRESH_TOKEN_GRANT = "refresh_token"


@dataclass
class Device:
    device_code: str
    user_code: str
    client_id: str
    scope: str | None
    challenge: str | None
    expires_at: float
    state: str = "pending"  # pending | approved | denied | consumed
    polls: int = 0


class FakeIdP:
    def __init__(
        self,
        *,
        expires_in: int = 600,
        interval: int = 1,
        client_id: str = "agentrt-test",
        token_expires_in: int = 3600,
    ) -> None:
        self.expires_in = expires_in
        self.token_expires_in = token_expires_in
        self.issued: list[str] = []  # access tokens, in the order they were given
        self.refresh_tokens: dict[str, str] = {}  # live refresh token -> client id
        self.refresh_status: int | None = None  # answer refreshes with this error
        self.interval = interval
        self.client_id = client_id
        self.slow_downs = 0
        self.slow_down_status = 400
        self.device_code_status: int | None = None  # answer /device/code with this error
        self.devices: list[Device] = []
        self.device_requests: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def device_endpoint(self) -> str:
        return f"{self.base_url}/device/code"

    @property
    def token_endpoint(self) -> str:
        return f"{self.base_url}/token"

    def provider_config(self) -> dict[str, str]:
        """An `AGENTRT_DEVICE_FLOW_PROVIDERS` entry for this IdP."""
        return {
            "deviceAuthorizationEndpoint": self.device_endpoint,
            "tokenEndpoint": self.token_endpoint,
            "clientId": self.client_id,
            "scope": "openid",
        }

    def latest(self) -> Device:
        with self._lock:
            return self.devices[-1]

    def _device(self, user_code: str) -> Device:
        with self._lock:
            return next(d for d in self.devices if d.user_code == user_code)

    def approve(self, user_code: str) -> None:
        self._device(user_code).state = "approved"

    def deny(self, user_code: str) -> None:
        self._device(user_code).state = "denied"

    def issue(self) -> dict[str, Any]:
        """A token response as an approved device flow gets it (to seed stored credentials)."""
        return self._grant(self.client_id)

    def revoke_refresh_tokens(self) -> None:
        with self._lock:
            self.refresh_tokens.clear()

    def refreshes(self) -> list[dict[str, str]]:
        with self._lock:
            return [r for r in self.token_requests if r.get("grant_type") == REFRESH_TOKEN_GRANT]

    def __enter__(self) -> FakeIdP:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the endpoints ---------------------------------------------------------------------

    def _device_code(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.device_requests.append(form)
        if self.device_code_status is not None:
            return self.device_code_status, {"error": "server_error"}
        if form.get("client_id") != self.client_id:
            return 400, {"error": "invalid_client"}
        user_code = f"{secrets.token_hex(2).upper()}-{secrets.token_hex(2).upper()}"
        device = Device(
            device_code=secrets.token_urlsafe(24),
            user_code=user_code,
            client_id=form["client_id"],
            scope=form.get("scope"),
            challenge=form.get("code_challenge"),
            expires_at=time.monotonic() + self.expires_in,
        )
        with self._lock:
            self.devices.append(device)
        return 200, {
            "device_code": device.device_code,
            "user_code": user_code,
            "verification_uri": f"{self.base_url}/device",
            "verification_uri_complete": f"{self.base_url}/device?user_code={user_code}",
            "expires_in": self.expires_in,
            "interval": self.interval,
        }

    def _token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.token_requests.append(form)
            device = next(
                (d for d in self.devices if d.device_code == form.get("device_code")), None
            )
        if form.get("grant_type") == REFRESH_TOKEN_GRANT:
            return self._refresh(form)
        if form.get("grant_type") != DEVICE_CODE_GRANT:
            return 400, {"error": "unsupported_grant_type"}
        if device is None or form.get("client_id") != device.client_id:
            return 400, {"error": "invalid_grant"}
        device.polls += 1
        if device.challenge is not None:
            verifier = form.get("code_verifier", "").encode("ascii")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            if digest.decode("ascii") != device.challenge:
                return 400, {"error": "invalid_grant"}
        if device.state == "consumed":
            return 400, {"error": "invalid_grant"}
        if time.monotonic() > device.expires_at:
            return 400, {"error": "expired_token"}
        if self.slow_downs > 0:
            self.slow_downs -= 1
            return self.slow_down_status, {"error": "slow_down"}
        if device.state == "denied":
            return 400, {"error": "access_denied"}
        if device.state == "approved":
            device.state = "consumed"
            return 200, self._grant(device.client_id)
        return 400, {"error": "authorization_pending"}

    def _refresh(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if self.refresh_status is not None:
            return self.refresh_status, {"error": "server_error"}
        with self._lock:
            client_id = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
        if client_id is None or client_id != form.get("client_id"):
            return 400, {"error": "invalid_grant"}
        return 200, self._grant(client_id)

    def _grant(self, client_id: str) -> dict[str, Any]:
        access, refresh = f"at-{secrets.token_hex(8)}", f"rt-{secrets.token_hex(8)}"
        with self._lock:
            self.issued.append(access)
            self.refresh_tokens[refresh] = client_id
        return {
            "access_token": access,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": self.token_expires_in,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8")
                form = {k: v[0] for k, v in parse_qs(raw).items()}
                # The qwen CLI's paths too, so `qwen-oauth` can point here.
                if self.path in ("/device/code", "/api/v1/oauth2/device/code"):
                    status, body = idp._device_code(form)
                elif self.path in ("/token", "/api/v1/oauth2/token"):
                    status, body = idp._token(form)
                else:
                    status, body = 404, {"error": "not_found"}
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
