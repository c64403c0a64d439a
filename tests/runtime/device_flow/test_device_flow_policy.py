"""RFC 8628 §3.5's error table as `token_response_meaning` reads it, and the providers'
configuration."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.device_flow.providers import QWEN_OAUTH, all_providers, parse_providers
from runtime.device_flow.tokens import token_response_meaning


@pytest.mark.parametrize(
    ("status", "body", "meaning"),
    [
        (200, {"access_token": "a", "token_type": "Bearer"}, ("authorized", None)),
        (400, {"error": "authorization_pending"}, ("pending", None)),
        (400, {"error": "slow_down"}, ("slow_down", None)),
        (429, {"error": "slow_down"}, ("slow_down", None)),
        (429, None, ("slow_down", None)),
        (400, {"error": "access_denied"}, ("failed", "access_denied")),
        (400, {"error": "expired_token"}, ("failed", "expired_token")),
        (400, {"error": "invalid_grant"}, ("failed", "invalid_grant")),
        (400, {"error": "invalid_client"}, ("failed", "upstream_error")),
        (200, {"token_type": "Bearer"}, ("failed", "upstream_error")),
        (401, "not json", ("failed", "upstream_error")),
        (503, None, ("retry", None)),
        # GitHub answers its errors with 200 and the RFC's error codes.
        (200, {"error": "authorization_pending"}, ("pending", None)),
        (200, {"error": "slow_down", "interval": 10}, ("slow_down", None)),
        (200, {"error": "access_denied"}, ("failed", "access_denied")),
    ],
)
def test_token_response_table(status: int, body: Any, meaning: tuple[str, str | None]) -> None:
    assert token_response_meaning(status, body) == meaning


def test_qwen_oauth_is_built_in_and_configured_providers_follow() -> None:
    configured = (
        '{"github": {"deviceAuthorizationEndpoint": "https://github.com/login/device/code",'
        ' "tokenEndpoint": "https://github.com/login/oauth/access_token", "clientId": "c"}}'
    )
    providers = all_providers("http://127.0.0.1:1/", configured)
    assert list(providers) == [QWEN_OAUTH, "github"]
    qwen = providers[QWEN_OAUTH]
    assert qwen.device_authorization_endpoint == "http://127.0.0.1:1/api/v1/oauth2/device/code"
    assert qwen.token_endpoint == "http://127.0.0.1:1/api/v1/oauth2/token"
    assert qwen.client_id == "f0304373b74a44d2b584a3fb70ca9e56" and qwen.pkce
    assert qwen.scope == "openid profile email model.completion"
    assert providers["github"].scope is None and not providers["github"].pkce


@pytest.mark.parametrize("raw", ["[]", '{"x": 1}', '{"x": {"clientId": "c"}}', "{"])
def test_malformed_providers_are_refused(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_providers(raw)
