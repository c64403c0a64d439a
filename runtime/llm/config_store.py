"""The live model-routing configuration (issue 11): providers, presets, site bindings.

Stored in `llm_provider`, `llm_preset` and `llm_site_binding` (runtime/llm/models.py),
read at the start of every model call, so a change applies at the next call without
a restart. The built-in provider and preset `settings` are not stored: they are the
deployment's settings (`AGENTRT_MODEL_PROVIDER`, `OPENAI_*`), and the root site
`Default` is bound to them until an operator binds it to something else.

`load_chain_plan` turns a site into the `ChainPlan` a call walks (credential aliases,
no secrets); `provider_config` gives the worker a provider with its keys, at attempt
time. The list functions return views without keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel
from sqlmodel import col, select

from runtime.llm.active import SCRIPTED_MODEL, active_model, served_model_id
from runtime.llm.models import LlmPreset, LlmProvider, LlmSiteBinding
from runtime.llm.routing import (
    SETTINGS_PRESET,
    SETTINGS_PROVIDER,
    SITE_PARENTS,
    ChainEntry,
    ChainPlan,
    CredentialConfig,
    Overlay,
    PlanEntry,
    PresetConfig,
    ProviderConfig,
    ResolvedSite,
    resolve_site,
)
from runtime.settings import Settings
from runtime.store.engine import Store

# The credential alias of the `settings` provider's key (OPENAI_API_KEY).
SETTINGS_CREDENTIAL = "env"
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}$")
MAX_CREDENTIALS = 20
MAX_FALLBACK = 10


class LlmConfigError(ValueError):
    """A configuration refused, or a name that does not exist; `status` is its HTTP answer."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def unknown_site(site_id: str) -> LlmConfigError:
    return LlmConfigError(
        404,
        "unknown_site",
        f'Unknown call site "{site_id}"',
        siteId=site_id,
        allowed=list(SITE_PARENTS),
    )


def unknown_preset(preset_id: str, status: int = 404) -> LlmConfigError:
    return LlmConfigError(status, "unknown_preset", f'No preset "{preset_id}"', presetId=preset_id)


def unknown_provider(provider_id: str, status: int = 404) -> LlmConfigError:
    return LlmConfigError(
        status, "unknown_provider", f'No provider "{provider_id}"', providerId=provider_id
    )


def _reserved(what: str, name: str) -> LlmConfigError:
    return LlmConfigError(
        400,
        "reserved_id",
        f'"{name}" is the built-in {what} (the deployment\'s settings) and cannot be replaced',
    )


def _check_id(what: str, value: str) -> None:
    if not ID_PATTERN.match(value):
        raise LlmConfigError(
            400,
            "invalid_id",
            f"{what} must match {ID_PATTERN.pattern}",
        )


# -- the built-in `settings` provider and preset ------------------------------------------------


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


def settings_preset(settings: Settings) -> PresetConfig:
    return PresetConfig(
        preset_id=SETTINGS_PRESET,
        model=active_model(settings).model_id,
        provider=SETTINGS_PROVIDER,
    )


# -- providers ------------------------------------------------------------------------------------


def provider_config(store: Store, settings: Settings, provider_id: str) -> ProviderConfig | None:
    """The provider with its credentials (keys included: worker side only), or None."""
    if provider_id == SETTINGS_PROVIDER:
        return settings_provider(settings)
    with store.session() as db:
        row = db.get(LlmProvider, provider_id)
    return None if row is None else _provider(row)


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
        base_url=provider.base_url or None,
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
        LlmConfigError: a reserved or malformed id, a base URL that is not http(s), a
            duplicate alias, an env var name that is not one, or a `deviceFlow` naming
            a provider the deployment does not configure.
    """
    _check_id("providerId", provider_id)
    if provider_id == SETTINGS_PROVIDER:
        raise _reserved("provider", provider_id)
    check_base_url(base_url)
    check_credentials(settings, credentials)
    row = LlmProvider(
        provider_id=provider_id,
        base_url=base_url,
        credentials=[c.model_dump(by_alias=True, exclude_none=True) for c in credentials],
        updated_at=now,
    )
    with store.session() as db:
        db.merge(row)
        db.commit()
    return provider_view(_provider(row), built_in=False, updated_at=now)


def check_base_url(base_url: str) -> None:
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018  (raises ValueError on a port out of range)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise LlmConfigError(
            400,
            "invalid_base_url",
            "baseUrl must be an http(s) URL with a host, e.g. https://api.openai.com/v1",
        )


def check_credentials(settings: Settings, credentials: Sequence[CredentialConfig]) -> None:
    if len(credentials) > MAX_CREDENTIALS:
        raise LlmConfigError(
            400, "invalid_credentials", f"at most {MAX_CREDENTIALS} credentials per provider"
        )
    seen: set[str] = set()
    flows = settings.device_flow_provider_map
    for credential in credentials:
        if credential.alias in seen:
            raise LlmConfigError(
                400, "invalid_credentials", f'two credentials have the alias "{credential.alias}"'
            )
        seen.add(credential.alias)
        if credential.api_key is not None and not credential.api_key:
            raise LlmConfigError(
                400, "invalid_credentials", f'credential "{credential.alias}": apiKey is empty'
            )
        if credential.api_key_env is not None and not ENV_NAME.match(credential.api_key_env):
            raise LlmConfigError(
                400,
                "invalid_credentials",
                f'credential "{credential.alias}": apiKeyEnv must be an environment variable name',
            )
        if credential.device_flow is not None and credential.device_flow not in flows:
            raise LlmConfigError(
                400,
                "unknown_device_flow_provider",
                f'credential "{credential.alias}": no device-flow provider '
                f'"{credential.device_flow}"',
                allowed=sorted(flows),
            )


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
        LlmConfigError: 400 `reserved_id` (`settings`), 409 `provider_in_use` naming the
            presets that use it.
    """
    if provider_id == SETTINGS_PROVIDER:
        raise _reserved("provider", provider_id)
    with store.session() as db:
        row = db.get(LlmProvider, provider_id)
        if row is None:
            return False
        presets = db.exec(select(LlmPreset)).all()
        users = sorted(p.preset_id for p in presets if provider_id in _providers_of(p))
        if users:
            raise LlmConfigError(
                409,
                "provider_in_use",
                f'Provider "{provider_id}" is used by presets {", ".join(users)}',
                presets=users,
            )
        db.delete(row)
        db.commit()
        return True


def _providers_of(row: LlmPreset) -> set[str]:
    return {row.provider, *(str(e.get("provider")) for e in row.fallback)}


# -- presets --------------------------------------------------------------------------------------


def preset_config(store: Store, settings: Settings, preset_id: str) -> PresetConfig | None:
    if preset_id == SETTINGS_PRESET:
        return settings_preset(settings)
    with store.session() as db:
        row = db.get(LlmPreset, preset_id)
    return None if row is None else _preset(row)


def _preset(row: LlmPreset) -> PresetConfig:
    return PresetConfig(
        preset_id=row.preset_id,
        model=row.model,
        provider=row.provider,
        overlay=Overlay.model_validate(row.overlay) if row.overlay is not None else None,
        fallback=[ChainEntry.model_validate(e) for e in row.fallback],
    )


class PresetView(BaseModel):
    preset: PresetConfig
    built_in: bool
    updated_at: datetime | None = None


def list_presets(store: Store, settings: Settings) -> list[PresetView]:
    """Every preset, the built-in `settings` one first."""
    with store.session() as db:
        rows = db.exec(select(LlmPreset).order_by(LlmPreset.preset_id)).all()
    views = [PresetView(preset=settings_preset(settings), built_in=True)]
    views.extend(
        PresetView(preset=_preset(r), built_in=False, updated_at=r.updated_at) for r in rows
    )
    return views


def put_preset(
    store: Store,
    settings: Settings,
    preset_id: str,
    model: str,
    provider: str,
    overlay: Overlay | None,
    fallback: Sequence[ChainEntry],
    now: datetime,
) -> PresetView:
    """Create or replace a preset; every provider it names must exist.

    Raises:
        LlmConfigError: a reserved or malformed id, an empty model, too long a
            fallback chain, or an unknown provider (400 `unknown_provider`).
    """
    _check_id("presetId", preset_id)
    if preset_id == SETTINGS_PRESET:
        raise _reserved("preset", preset_id)
    if len(fallback) > MAX_FALLBACK:
        raise LlmConfigError(400, "invalid_preset", f"at most {MAX_FALLBACK} fallback entries")
    for entry in [ChainEntry(model=model, provider=provider), *fallback]:
        if not entry.model.strip() or len(entry.model) > 200:
            raise LlmConfigError(400, "invalid_preset", "a model name is 1 to 200 characters")
        if provider_config(store, settings, entry.provider) is None:
            raise unknown_provider(entry.provider, status=400)
    row = LlmPreset(
        preset_id=preset_id,
        model=model,
        provider=provider,
        overlay=overlay.model_dump(by_alias=True, exclude_none=True) if overlay else None,
        fallback=[e.model_dump() for e in fallback],
        updated_at=now,
    )
    with store.session() as db:
        db.merge(row)
        db.commit()
    return PresetView(preset=_preset(row), built_in=False, updated_at=now)


def get_preset(store: Store, settings: Settings, preset_id: str) -> PresetView | None:
    if preset_id == SETTINGS_PRESET:
        return PresetView(preset=settings_preset(settings), built_in=True)
    with store.session() as db:
        row = db.get(LlmPreset, preset_id)
    if row is None:
        return None
    return PresetView(preset=_preset(row), built_in=False, updated_at=row.updated_at)


def delete_preset(store: Store, preset_id: str) -> bool:
    """Remove a preset no site is bound to; False when there was none.

    Raises:
        LlmConfigError: 400 `reserved_id` (`settings`), 409 `preset_in_use` naming the
            sites bound to it.
    """
    if preset_id == SETTINGS_PRESET:
        raise _reserved("preset", preset_id)
    with store.session() as db:
        row = db.get(LlmPreset, preset_id)
        if row is None:
            return False
        bound = db.exec(
            select(LlmSiteBinding).where(col(LlmSiteBinding.preset_id) == preset_id)
        ).all()
        if bound:
            sites = sorted(b.site_id for b in bound)
            raise LlmConfigError(
                409,
                "preset_in_use",
                f'Preset "{preset_id}" is bound to {", ".join(sites)}: detach it first',
                sites=sites,
            )
        db.delete(row)
        db.commit()
        return True


# -- site bindings --------------------------------------------------------------------------------


def site_bindings(store: Store) -> dict[str, str]:
    with store.session() as db:
        rows = db.exec(select(LlmSiteBinding)).all()
    return {row.site_id: row.preset_id for row in rows}


def resolved_site(store: Store, site_id: str) -> ResolvedSite:
    """Raises: LlmConfigError 404 `unknown_site`."""
    if site_id not in SITE_PARENTS:
        raise unknown_site(site_id)
    return resolve_site(site_id, site_bindings(store))


def list_sites(store: Store) -> list[ResolvedSite]:
    """Every call site, root first, with its own binding and the one in force."""
    bindings = site_bindings(store)
    return [resolve_site(site, bindings) for site in SITE_PARENTS]


def bind_site(
    store: Store, settings: Settings, site_id: str, preset_id: str, now: datetime
) -> ResolvedSite:
    """Attach a preset to a site (replacing its own binding); its children inherit it.

    Raises:
        LlmConfigError: 404 `unknown_site`, 400 `unknown_preset`.
    """
    if site_id not in SITE_PARENTS:
        raise unknown_site(site_id)
    if preset_config(store, settings, preset_id) is None:
        raise unknown_preset(preset_id, status=400)
    with store.session() as db:
        db.merge(LlmSiteBinding(site_id=site_id, preset_id=preset_id, updated_at=now))
        db.commit()
    return resolved_site(store, site_id)


def unbind_site(store: Store, site_id: str) -> ResolvedSite:
    """Detach a site's own preset: it inherits its parent's again. Idempotent.

    Raises:
        LlmConfigError: 404 `unknown_site`.
    """
    if site_id not in SITE_PARENTS:
        raise unknown_site(site_id)
    with store.session() as db:
        row = db.get(LlmSiteBinding, site_id)
        if row is not None:
            db.delete(row)
            db.commit()
    return resolved_site(store, site_id)


# -- the plan of one call -------------------------------------------------------------------------


def load_chain_plan(
    store: Store, settings: Settings, site: str, model_override: str | None = None
) -> ChainPlan:
    """What a call at `site` will try, in order, from the configuration in force now.

    `model_override` is a session's own model choice (POST /session/:id/model): it
    replaces the primary model only while the site resolves to the built-in
    `settings` provider of kind openai (today's behaviour, `served_model_id`);
    under any other binding the binding wins, so a session created before a
    provider change follows the new binding rather than sending a model the new
    provider does not know.

    Raises:
        LlmConfigError: 404 `unknown_site`; 404 `unknown_preset` / `unknown_provider`
            only if the store was edited behind the routes' back.
    """
    resolved = resolved_site(store, site)
    preset = preset_config(store, settings, resolved.resolved_preset_id)
    if preset is None:
        raise unknown_preset(resolved.resolved_preset_id)
    entries: list[PlanEntry] = []
    for step, entry in enumerate(
        [ChainEntry(model=preset.model, provider=preset.provider), *preset.fallback]
    ):
        provider = provider_config(store, settings, entry.provider)
        if provider is None:
            raise unknown_provider(entry.provider)
        model = entry.model
        if provider.kind == "scripted":
            model = SCRIPTED_MODEL
        elif step == 0 and provider.provider_id == SETTINGS_PROVIDER:
            model = served_model_id("openai", entry.model, model_override)
        aliases: list[str | None] = [c.alias for c in provider.credentials] or [None]
        entries.append(PlanEntry(model=model, provider=entry.provider, credential_aliases=aliases))
    return ChainPlan(site=site, preset_id=preset.preset_id, entries=entries, overlay=preset.overlay)
