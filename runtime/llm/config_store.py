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

from datetime import datetime

from sqlmodel import select

from runtime.llm.active import SCRIPTED_MODEL, served_model_id
from runtime.llm.config_errors import (
    LlmConfigRefusal,
    UnknownPreset,
    UnknownProvider,
    UnknownSite,
)
from runtime.llm.contracts import (
    SETTINGS_PROVIDER,
    SITE_PARENTS,
    ChainEntry,
    ChainPlan,
    ModelBinding,
    PlanEntry,
    ResolvedSite,
    resolve_site,
)
from runtime.llm.models import LlmSiteBinding
from runtime.llm.preset_store import (
    PresetView,
    delete_preset,
    get_preset,
    list_presets,
    preset_config,
    put_preset,
    settings_preset,
)
from runtime.llm.provider_store import (
    SETTINGS_CREDENTIAL,
    CredentialView,
    ProviderView,
    delete_provider,
    find_credential,
    get_provider,
    list_providers,
    provider_config,
    put_provider,
    settings_provider,
    static_api_key,
)
from runtime.settings import Settings
from runtime.store.engine import Store

__all__ = [
    "SETTINGS_CREDENTIAL",
    "CredentialView",
    "LlmConfigRefusal",
    "PresetView",
    "ProviderView",
    "UnknownPreset",
    "UnknownProvider",
    "UnknownSite",
    "bind_site",
    "delete_preset",
    "delete_provider",
    "find_credential",
    "get_preset",
    "get_provider",
    "list_presets",
    "list_providers",
    "list_sites",
    "load_chain_plan",
    "preset_config",
    "provider_config",
    "put_preset",
    "put_provider",
    "resolved_site",
    "settings_preset",
    "settings_provider",
    "site_bindings",
    "static_api_key",
    "unbind_site",
]


# -- site bindings --------------------------------------------------------------------------------


def site_bindings(store: Store) -> dict[str, str]:
    with store.session() as db:
        rows = db.exec(select(LlmSiteBinding)).all()
    return {row.site_id: row.preset_id for row in rows}


def resolved_site(store: Store, site_id: str) -> ResolvedSite:
    """Raises: ApplicationError `unknown_site` (404)."""
    if site_id not in SITE_PARENTS:
        raise UnknownSite(site_id=site_id).application_error()
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
        ApplicationError: `unknown_site` (404), `unknown_preset` (400).
    """
    if site_id not in SITE_PARENTS:
        raise UnknownSite(site_id=site_id).application_error()
    if preset_config(store, settings, preset_id) is None:
        raise UnknownPreset(preset_id=preset_id, status=400).application_error()
    binding = LlmSiteBinding(site_id=site_id, preset_id=preset_id, updated_at=now)
    # Two first binds of a site race on its key: the loser runs again and overwrites.
    store.run_transaction(lambda db: db.merge(binding))
    return resolved_site(store, site_id)


def unbind_site(store: Store, site_id: str) -> ResolvedSite:
    """Detach a site's own preset: it inherits its parent's again. Idempotent.

    Raises:
        ApplicationError: `unknown_site` (404).
    """
    if site_id not in SITE_PARENTS:
        raise UnknownSite(site_id=site_id).application_error()
    with store.transaction() as db:
        row = db.get(LlmSiteBinding, site_id)
        if row is not None:
            db.delete(row)
    return resolved_site(store, site_id)


# -- the plan of one call -------------------------------------------------------------------------


def load_chain_plan(
    store: Store,
    settings: Settings,
    site: str,
    model_override: str | None = None,
    override_binding: ModelBinding | None = None,
    preset_override: str | None = None,
) -> ChainPlan:
    """What a call at `site` will try, in order, from the configuration in force now
    (`preset_override`, a coding task's preset, wins over the site's binding).

    `model_override` is a session's own model choice (POST /session/:id/model), made
    while the site resolved to `override_binding` (a preset and its primary provider).
    It replaces the primary model iff the site still resolves to that same binding;
    otherwise the binding wins, so a session created before a provider change follows
    the new binding rather than sending a model the new provider does not know. A
    choice recorded without its binding (before bindings were) counts only on the
    deployment's `settings` provider of kind openai, as it did then. A scripted provider
    serves only 'scripted' (`served_model_id`).

    Raises:
        ApplicationError: `unknown_site`; `unknown_preset` / `unknown_provider` (404)
            only when a delete raced a bind (the routes refuse deleting what is in use).
    """
    resolved = resolved_site(store, site)
    preset_id = preset_override or resolved.resolved_preset_id
    preset = preset_config(store, settings, preset_id)
    if preset is None:
        raise UnknownPreset(preset_id=preset_id).application_error()
    entries: list[PlanEntry] = []
    for step, entry in enumerate(
        [ChainEntry(model=preset.model, provider=preset.provider), *preset.fallback]
    ):
        provider = provider_config(store, settings, entry.provider)
        if provider is None:
            raise UnknownProvider(provider_id=entry.provider).application_error()
        model = entry.model
        if provider.kind == "scripted":
            model = SCRIPTED_MODEL
        elif step == 0 and _override_applies(preset.preset_id, entry.provider, override_binding):
            model = served_model_id("openai", entry.model, model_override)
        aliases: list[str | None] = [c.alias for c in provider.credentials] or [None]
        entries.append(PlanEntry(model=model, provider=entry.provider, credential_aliases=aliases))
    return ChainPlan(site=site, preset_id=preset.preset_id, entries=entries, overlay=preset.overlay)


def _override_applies(preset_id: str, provider_id: str, binding: ModelBinding | None) -> bool:
    if binding is None:
        return provider_id == SETTINGS_PROVIDER
    return (binding.preset_id, binding.provider) == (preset_id, provider_id)


def session_binding(store: Store, settings: Settings, site: str) -> tuple[ModelBinding, bool]:
    """What `site` resolves to now, as a session's model choice records it, and whether
    its primary provider is scripted (it serves only 'scripted').

    Raises:
        ApplicationError: as `load_chain_plan`.
    """
    plan = load_chain_plan(store, settings, site)
    primary = plan.entries[0]
    provider = provider_config(store, settings, primary.provider)
    scripted = provider is None or provider.kind == "scripted"
    return ModelBinding(preset_id=plan.preset_id, provider=primary.provider), scripted
