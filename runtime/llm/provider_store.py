"""Providers of the model-routing configuration (issue 11): the built-in `settings` one
(the deployment's settings, never stored) and the stored `llm_provider` rows.

`provider_config` is the worker's view, keys included; every other function returns
views without a key, and URLs without their user-info. A provider's `baseUrl` and its
credentials' `apiKeyEnv` follow the egress rule and the provider-key rule
(`runtime.egress`), checked here at PUT and again by the worker before it reads a
variable or opens a connection.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel
from sqlmodel import select

from runtime.egress import key_env_refusal, redact_url, url_refusal
from runtime.llm.config_errors import (
    InvalidBaseUrl,
    InvalidCredentials,
    ProviderInUse,
    ReservedId,
    UnknownCredential,
    UnknownDeviceFlowProvider,
    check_id,
)
from runtime.llm.contracts import SETTINGS_PROVIDER, CredentialConfig, ProviderConfig
from runtime.llm.models import LlmPreset, LlmProvider
from runtime.settings import Settings
from runtime.store.engine import Store

# The credential alias of the `settings` provider's key (OPENAI_API_KEY).
SETTINGS_CREDENTIAL = "env"
MAX_CREDENTIALS = 20


def settings_provider(settings: Settings) -> ProviderConfig:
    """Today's settings as a provider: the scripted model, or OPENAI_* with one key."""
    if settings.model_provider == "scripted":
        return ProviderConfig(provider_id=SETTINGS_PROVIDER, base_url="", kind="scripted")
    credentials = []
    if settings.openai_api_key:
        credentials.append(
            CredentialConfig(alias=SETTINGS_CREDENTIAL, apiKey=settings.openai_api_key)
        )
    return ProviderConfig(
        provider_id=SETTINGS_PROVIDER,
        base_url=settings.openai_base_url,
        credentials=credentials,
        kind="openai",
    )


def provider_config(store: Store, settings: Settings, provider_id: str) -> ProviderConfig | None:
    """The provider with its credentials (keys included: worker side only), or None."""
    if provider_id == SETTINGS_PROVIDER:
        return settings_provider(settings)
    with store.session() as db:
        row = db.get(LlmProvider, provider_id)
    return None if row is None else _provider(row)


def find_credential(provider: ProviderConfig, alias: str | None) -> CredentialConfig | None:
    """The credential an attempt's alias names; None for a provider that needs no key.

    Raises:
        ApplicationError: `unknown_credential` (404) when the provider no longer has that
            alias (it was replaced between the plan and the attempt).
    """
    if alias is None:
        return None
    for credential in provider.credentials:
        if credential.alias == alias:
            return credential
    raise UnknownCredential(provider_id=provider.provider_id, alias=alias).application_error()


def static_api_key(
    credential: CredentialConfig, environ: Mapping[str, str], listed: Collection[str] = ()
) -> str | None:
    """The key of an `apiKey` or `apiKeyEnv` credential (None when the variable is unset
    or empty); a `deviceFlow` credential's token comes from the device flow instead.

    Args:
        listed: the variables `AGENTRT_PROVIDER_KEY_ENVS` allows beyond `*_API_KEY`.

    Raises:
        ApplicationError: `invalid_credentials` when the provider-key rule refuses the
            variable (a row stored before the rule): it is never read.
    """
    if credential.api_key is not None:
        return credential.api_key
    if credential.api_key_env is not None:
        refusal = key_env_refusal(credential.api_key_env, listed)
        if refusal is not None:
            raise InvalidCredentials(
                reason=f'credential "{credential.alias}": {refusal.message}', rule=refusal.rule
            ).application_error()
        return environ.get(credential.api_key_env) or None
    return None


def _provider(row: LlmProvider) -> ProviderConfig:
    return ProviderConfig(
        provider_id=row.provider_id,
        base_url=row.base_url,
        credentials=[CredentialConfig.model_validate(c) for c in row.credentials],
    )


def list_providers(store: Store, settings: Settings) -> list[ProviderView]:
    """Every provider, the built-in `settings` one first; aliases and kinds, never a key."""
    with store.session() as db:
        rows = db.exec(select(LlmProvider).order_by(LlmProvider.provider_id)).all()
    views = [provider_view(settings_provider(settings), built_in=True)]
    views.extend(
        provider_view(_provider(row), built_in=False, updated_at=row.updated_at) for row in rows
    )
    return views


class CredentialView(BaseModel):
    """A credential as shown: its alias, its kind, and the name it points to (never a key)."""

    alias: str
    kind: Literal["apiKey", "apiKeyEnv", "deviceFlow"]
    api_key_env: str | None = None
    device_flow: str | None = None


class ProviderView(BaseModel):
    provider_id: str
    kind: Literal["openai", "scripted"]
    base_url: str | None
    credentials: list[CredentialView]
    built_in: bool
    updated_at: datetime | None = None


def provider_view(
    provider: ProviderConfig, *, built_in: bool, updated_at: datetime | None = None
) -> ProviderView:
    return ProviderView(
        provider_id=provider.provider_id,
        kind=provider.kind,
        base_url=redact_url(provider.base_url) or None,
        credentials=[_credential_view(c) for c in provider.credentials],
        built_in=built_in,
        updated_at=updated_at,
    )


def _credential_view(credential: CredentialConfig) -> CredentialView:
    if credential.api_key_env is not None:
        return CredentialView(
            alias=credential.alias, kind="apiKeyEnv", api_key_env=credential.api_key_env
        )
    if credential.device_flow is not None:
        return CredentialView(
            alias=credential.alias, kind="deviceFlow", device_flow=credential.device_flow
        )
    return CredentialView(alias=credential.alias, kind="apiKey")


def put_provider(
    store: Store,
    settings: Settings,
    provider_id: str,
    base_url: str,
    credentials: Sequence[CredentialConfig],
    now: datetime,
) -> ProviderView:
    """Create or replace a provider; effective at the next model call.

    Raises:
        ApplicationError: a reserved or malformed id, a base URL the egress rule refuses
            (`invalid_base_url`), a duplicate alias, an `apiKeyEnv` the provider-key rule
            refuses (`invalid_credentials`), or a `deviceFlow` naming a provider the
            deployment does not configure.
    """
    check_id("providerId", provider_id)
    if provider_id == SETTINGS_PROVIDER:
        raise ReservedId(what="provider", name=provider_id).application_error()
    check_base_url(base_url)
    check_credentials(settings, credentials)
    row = LlmProvider(
        provider_id=provider_id,
        base_url=base_url,
        credentials=[c.model_dump(by_alias=True, exclude_none=True) for c in credentials],
        updated_at=now,
    )
    store.run_transaction(lambda db: db.merge(row))  # a racing first save: last wins
    return provider_view(_provider(row), built_in=False, updated_at=now)


def check_base_url(base_url: str) -> None:
    """Raises: ApplicationError `invalid_base_url` naming the egress rule it breaks."""
    refusal = url_refusal(base_url)
    if refusal is not None:
        raise InvalidBaseUrl(reason=refusal.message, rule=refusal.rule).application_error()


def check_credentials(settings: Settings, credentials: Sequence[CredentialConfig]) -> None:
    if len(credentials) > MAX_CREDENTIALS:
        raise InvalidCredentials(
            reason=f"at most {MAX_CREDENTIALS} credentials per provider"
        ).application_error()
    seen: set[str] = set()
    flows = settings.device_flow_provider_map
    for credential in credentials:
        if credential.alias in seen:
            raise InvalidCredentials(
                reason=f'two credentials have the alias "{credential.alias}"'
            ).application_error()
        seen.add(credential.alias)
        if credential.api_key is not None and not credential.api_key:
            raise InvalidCredentials(
                reason=f'credential "{credential.alias}": apiKey is empty'
            ).application_error()
        if credential.api_key_env is not None:
            refusal = key_env_refusal(credential.api_key_env, settings.provider_key_envs)
            if refusal is not None:
                raise InvalidCredentials(
                    reason=f'credential "{credential.alias}": {refusal.message}', rule=refusal.rule
                ).application_error()
        if credential.device_flow is not None and credential.device_flow not in flows:
            raise UnknownDeviceFlowProvider(
                alias=credential.alias, device_flow=credential.device_flow, allowed=sorted(flows)
            ).application_error()


def get_provider(store: Store, settings: Settings, provider_id: str) -> ProviderView | None:
    """One provider as listed (no key), or None."""
    if provider_id == SETTINGS_PROVIDER:
        return provider_view(settings_provider(settings), built_in=True)
    with store.session() as db:
        row = db.get(LlmProvider, provider_id)
    if row is None:
        return None
    return provider_view(_provider(row), built_in=False, updated_at=row.updated_at)


def delete_provider(store: Store, provider_id: str) -> bool:
    """Remove a provider no preset names; False when there was none.

    Raises:
        ApplicationError: `reserved_id` (`settings`), `provider_in_use` (409) naming the
            presets that use it.
    """
    if provider_id == SETTINGS_PROVIDER:
        raise ReservedId(what="provider", name=provider_id).application_error()
    with store.transaction() as db:
        row = db.get(LlmProvider, provider_id)
        if row is None:
            return False
        presets = db.exec(select(LlmPreset)).all()
        users = sorted(p.preset_id for p in presets if provider_id in _providers_of(p))
        if users:
            raise ProviderInUse(provider_id=provider_id, presets=users).application_error()
        db.delete(row)
        return True


def _providers_of(row: LlmPreset) -> set[str]:
    return {row.provider, *(str(e.get("provider")) for e in row.fallback)}
