"""The device-flow providers a deployment offers: `qwen-oauth` built in, plus the standard
RFC 8628 providers of `AGENTRT_DEVICE_FLOW_PROVIDERS`."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

QWEN_OAUTH = "qwen-oauth"
# The qwen CLI's public client (qwen-code `qwenOAuth2.ts`): same endpoints, same PKCE.
QWEN_CLIENT_ID = "f0304373b74a44d2b584a3fb70ca9e56"
QWEN_SCOPE = "openid profile email model.completion"


class DeviceFlowProvider(BaseModel):
    """One identity provider's device-flow endpoints and public client."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    provider_id: str
    device_authorization_endpoint: str = Field(alias="deviceAuthorizationEndpoint")
    token_endpoint: str = Field(alias="tokenEndpoint")
    client_id: str = Field(alias="clientId")
    scope: str | None = None
    pkce: bool = False


def qwen_provider(base_url: str) -> DeviceFlowProvider:
    base = base_url.rstrip("/")
    return DeviceFlowProvider(
        provider_id=QWEN_OAUTH,
        device_authorization_endpoint=f"{base}/api/v1/oauth2/device/code",
        token_endpoint=f"{base}/api/v1/oauth2/token",
        client_id=QWEN_CLIENT_ID,
        scope=QWEN_SCOPE,
        pkce=True,
    )


def parse_providers(raw: str | None) -> dict[str, DeviceFlowProvider]:
    """`{"<providerId>": {"deviceAuthorizationEndpoint", "tokenEndpoint", "clientId",
    "scope"?}}`, as `AGENTRT_DEVICE_FLOW_PROVIDERS` holds it.

    Raises:
        ValueError: the value is not such an object.
    """
    if not raw or not raw.strip():
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("AGENTRT_DEVICE_FLOW_PROVIDERS must be a JSON object")
    providers: dict[str, DeviceFlowProvider] = {}
    for provider_id, config in value.items():
        if not isinstance(config, dict) or not provider_id:
            raise ValueError(f"device-flow provider {provider_id!r} must be an object")
        providers[provider_id] = DeviceFlowProvider.model_validate(
            {**config, "provider_id": provider_id}
        )
    return providers


def all_providers(qwen_base_url: str, configured: str | None) -> dict[str, DeviceFlowProvider]:
    """`qwen-oauth` first, then the configured ones (which may not redefine it)."""
    providers = {QWEN_OAUTH: qwen_provider(qwen_base_url)}
    for provider_id, provider in parse_providers(configured).items():
        providers.setdefault(provider_id, provider)
    return providers


def credentials_path(data_dir: Path, provider_id: str) -> Path:
    """Where a provider's credentials land: on the daemon's disk, never on a client."""
    return data_dir / "credentials" / f"{provider_id}.json"


def device_flow_secrets_path(data_dir: Path, flow_id: str) -> Path:
    """Where a pending flow's device code and PKCE verifier wait (keyed by the flow id,
    the workflow's run id): on the daemon's disk, never in workflow history."""
    if not flow_id or not all(c.isalnum() or c in "-_" for c in flow_id):
        raise ValueError(f"not a device-flow id: {flow_id!r}")
    return data_dir / "device-flow" / f"{flow_id}.json"
