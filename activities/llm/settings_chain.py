"""The built-in `settings` binding as a chain plan and a provider (no stored config).

What `runtime.llm.config_store` resolves for a deployment that configured nothing: the
root `Default` bound to the `settings` preset, whose one entry is the deployment's
model on the `settings` provider (scripted, or OPENAI_BASE_URL with the alias `env` =
OPENAI_API_KEY, or no credential at all).
"""

from __future__ import annotations

from runtime.llm.active import SCRIPTED_MODEL
from runtime.llm.routing import (
    SETTINGS_PRESET,
    SETTINGS_PROVIDER,
    ChainPlan,
    CredentialConfig,
    PlanEntry,
    ProviderConfig,
)
from runtime.settings import Settings

ENV_ALIAS = "env"


def settings_provider(settings: Settings) -> ProviderConfig:
    if settings.model_provider != "openai":
        return ProviderConfig(provider_id=SETTINGS_PROVIDER, base_url="", kind="scripted")
    credentials = []
    if settings.openai_api_key:
        credentials = [CredentialConfig(alias=ENV_ALIAS, api_key=settings.openai_api_key)]
    return ProviderConfig(
        provider_id=SETTINGS_PROVIDER, base_url=settings.openai_base_url, credentials=credentials
    )


def settings_plan(settings: Settings, site: str, model_override: str | None = None) -> ChainPlan:
    provider = settings_provider(settings)
    if provider.kind == "scripted":
        model = SCRIPTED_MODEL
    elif model_override and model_override != SCRIPTED_MODEL:
        model = model_override
    else:
        model = settings.openai_model
    aliases: list[str | None] = [c.alias for c in provider.credentials] or [None]
    entry = PlanEntry(model=model, provider=SETTINGS_PROVIDER, credential_aliases=aliases)
    return ChainPlan(site=site, preset_id=SETTINGS_PRESET, entries=[entry])
