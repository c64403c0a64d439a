"""Model routing, live (issue 11): /api/v1/llm/{providers,presets,sites,prices,attempts}.

router → runtime/llm/config_store.py and runtime/llm/pricing.py (the store); a change
applies at the next model call, with no restart. Mutations are behind the strict
mutation gate. No answer ever carries a key: providers show aliases and kinds.
The built-in `settings` provider and preset (the deployment's settings) are listed,
read-only; the root site `Default` is bound to them until an operator rebinds it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from api.deps import SettingsDep, StoreDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.llm.models import (
    AttemptList,
    AttemptOut,
    PresetBody,
    PresetList,
    PresetOut,
    PriceBody,
    PriceOut,
    ProviderBody,
    ProviderList,
    ProviderOut,
    SiteList,
    SiteOut,
    SitePresetBody,
)
from api.openapi import errors
from api.security import require_configured_token
from runtime.llm import config_store, pricing
from runtime.llm.attempt_log import MAX_ATTEMPTS, list_attempts
from runtime.llm.config_errors import (
    UnknownPreset,
    UnknownPrice,
    UnknownPriceOverride,
    UnknownProvider,
)
from runtime.llm.contracts import ChainEntry, OwnerKind

router = APIRouter(prefix="/api/v1/llm", route_class=StrictJsonRoute)

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
SITE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,119}$"
ProviderPath = Annotated[str, Path(pattern=ID_PATTERN)]
PresetPath = Annotated[str, Path(pattern=ID_PATTERN)]
SitePath = Annotated[str, Path(pattern=SITE_PATTERN)]
# A model name may hold '/' and ':' ("openai/gpt-4o", "claude-3:beta"): a path converter.
ModelPath = Annotated[str, Path(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
OwnerQuery = Annotated[str | None, Query(min_length=1, max_length=400)]
MUTATION = [Depends(require_configured_token)]


def _now() -> datetime:
    return datetime.now(UTC)


# -- providers ----------------------------------------------------------------------------------


@router.get("/providers")
async def get_providers(store: StoreDep, settings: SettingsDep) -> ProviderList:
    """Every provider, the built-in `settings` one first: aliases and kinds, never a key."""
    views = await asyncio.to_thread(config_store.list_providers, store, settings)
    return ProviderList(providers=[ProviderOut.of(v) for v in views])


@router.put("/providers/{providerId}", dependencies=MUTATION, responses=errors(400, 401))
async def put_provider(
    providerId: ProviderPath, body: ProviderBody, store: StoreDep, settings: SettingsDep
) -> ProviderOut:
    """Create or replace a provider. Each credential has exactly one of `apiKey` (stored,
    never shown), `apiKeyEnv` (read by the worker at each attempt) or `deviceFlow` (a
    configured device-flow provider's token)."""
    view = await asyncio.to_thread(
        config_store.put_provider,
        store,
        settings,
        providerId,
        body.base_url,
        [c.config() for c in body.credentials],
        _now(),
    )
    return ProviderOut.of(view)


@router.get("/providers/{providerId}", responses=errors(400, 404))
async def get_provider(
    providerId: ProviderPath, store: StoreDep, settings: SettingsDep
) -> ProviderOut:
    view = await asyncio.to_thread(config_store.get_provider, store, settings, providerId)
    if view is None:
        raise ApiError.of(UnknownProvider(provider_id=providerId))
    return ProviderOut.of(view)


@router.delete(
    "/providers/{providerId}",
    dependencies=MUTATION,
    status_code=204,
    response_class=Response,
    responses=errors(400, 401, 404, 409),
)
async def delete_provider(providerId: ProviderPath, store: StoreDep) -> Response:
    """Remove a provider; 409 `provider_in_use` while a preset names it."""
    deleted = await asyncio.to_thread(config_store.delete_provider, store, providerId)
    if not deleted:
        raise ApiError.of(UnknownProvider(provider_id=providerId))
    return Response(status_code=204)


# -- presets ------------------------------------------------------------------------------------


@router.get("/presets")
async def get_presets(store: StoreDep, settings: SettingsDep) -> PresetList:
    """Every preset, the built-in `settings` one (the deployment's model) first."""
    views = await asyncio.to_thread(config_store.list_presets, store, settings)
    return PresetList(presets=[PresetOut.of(v.preset, v.built_in, v.updated_at) for v in views])


@router.put("/presets/{presetId}", dependencies=MUTATION, responses=errors(400, 401))
async def put_preset(
    presetId: PresetPath, body: PresetBody, store: StoreDep, settings: SettingsDep
) -> PresetOut:
    """Create or replace a preset: a model on a provider, an optional overlay, and a
    fallback chain; every provider it names must exist (400 `unknown_provider`)."""
    view = await asyncio.to_thread(
        config_store.put_preset,
        store,
        settings,
        presetId,
        body.model,
        body.provider,
        body.overlay.config() if body.overlay is not None else None,
        [ChainEntry(model=e.model, provider=e.provider) for e in body.fallback],
        _now(),
    )
    return PresetOut.of(view.preset, view.built_in, view.updated_at)


@router.get("/presets/{presetId}", responses=errors(400, 404))
async def get_preset(presetId: PresetPath, store: StoreDep, settings: SettingsDep) -> PresetOut:
    view = await asyncio.to_thread(config_store.get_preset, store, settings, presetId)
    if view is None:
        raise ApiError.of(UnknownPreset(preset_id=presetId))
    return PresetOut.of(view.preset, view.built_in, view.updated_at)


@router.delete(
    "/presets/{presetId}",
    dependencies=MUTATION,
    status_code=204,
    response_class=Response,
    responses=errors(400, 401, 404, 409),
)
async def delete_preset(presetId: PresetPath, store: StoreDep) -> Response:
    """Remove a preset; 409 `preset_in_use` while a site is bound to it."""
    deleted = await asyncio.to_thread(config_store.delete_preset, store, presetId)
    if not deleted:
        raise ApiError.of(UnknownPreset(preset_id=presetId))
    return Response(status_code=204)


# -- call sites ---------------------------------------------------------------------------------


@router.get("/sites")
async def get_sites(store: StoreDep) -> SiteList:
    """Every call site, root first: its own preset (or null) and the one in force."""
    sites = await asyncio.to_thread(config_store.list_sites, store)
    return SiteList(sites=[SiteOut.of(s) for s in sites])


@router.put("/sites/{siteId}/preset", dependencies=MUTATION, responses=errors(400, 401, 404))
async def put_site_preset(
    siteId: SitePath, body: SitePresetBody, store: StoreDep, settings: SettingsDep
) -> SiteOut:
    """Attach a preset to a site; the sites under it inherit it. Effective at the next call."""
    site = await asyncio.to_thread(
        config_store.bind_site, store, settings, siteId, body.preset_id, _now()
    )
    return SiteOut.of(site)


@router.delete("/sites/{siteId}/preset", dependencies=MUTATION, responses=errors(400, 401, 404))
async def delete_site_preset(siteId: SitePath, store: StoreDep) -> SiteOut:
    """Detach a site's own preset: it inherits its parent's again (idempotent)."""
    site = await asyncio.to_thread(config_store.unbind_site, store, siteId)
    return SiteOut.of(site)


# -- prices -------------------------------------------------------------------------------------


def _price_out(model: str, price: pricing.Price, version: str) -> PriceOut:
    return PriceOut(
        model=model,
        input_per_mtok_usd=price.input_per_mtok_usd,
        output_per_mtok_usd=price.output_per_mtok_usd,
        cached_input_per_mtok_usd=price.cached_input_per_mtok_usd,
        version=version,
        source="override" if version.startswith(pricing.OVERRIDE_PREFIX) else "genai-prices",
    )


@router.get("/prices/{model:path}", responses=errors(400, 404))
async def get_price(model: ModelPath, store: StoreDep) -> PriceOut:
    """The price in force for a model (an override, else the bundled table) and its version."""
    price, version = await asyncio.to_thread(pricing.price_for, store, model)
    if price is None:
        raise ApiError.of(UnknownPrice(model=model, version=version))
    return _price_out(model, price, version)


@router.put("/prices/{model:path}", dependencies=MUTATION, responses=errors(400, 401))
async def put_price(model: ModelPath, body: PriceBody, store: StoreDep) -> PriceOut:
    """Set a model's price (dollars per million tokens), over the bundled table; the
    attempts it charges record the version `override:<updated at>`."""
    price = pricing.Price(
        input_per_mtok_usd=body.input_per_mtok_usd,
        output_per_mtok_usd=body.output_per_mtok_usd,
        cached_input_per_mtok_usd=body.cached_input_per_mtok_usd,
    )
    row = await asyncio.to_thread(pricing.put_price, store, model, price, _now())
    return _price_out(model, price, pricing.override_version(row.updated_at))


@router.delete(
    "/prices/{model:path}",
    dependencies=MUTATION,
    status_code=204,
    response_class=Response,
    responses=errors(400, 401, 404),
)
async def delete_price(model: ModelPath, store: StoreDep) -> Response:
    """Drop a model's override: the bundled table prices it again."""
    if not await asyncio.to_thread(pricing.delete_price, store, model):
        raise ApiError.of(UnknownPriceOverride(model=model))
    return Response(status_code=204)


# -- attempts -----------------------------------------------------------------------------------


@router.get("/attempts", responses=errors(400))
async def get_attempts(
    store: StoreDep,
    sessionId: OwnerQuery = None,
    turnId: OwnerQuery = None,
    agentId: OwnerQuery = None,
    site: Annotated[str | None, Query(min_length=1, max_length=120)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_ATTEMPTS)] = 100,
) -> AttemptList:
    """One record per model-call attempt, failed ones included, oldest first: the latest
    `limit` of those matching every given filter (they combine with AND; an attempt has
    one owner, so two owner filters match only attempts both name). An attempt still
    running is listed once it ends."""
    owners = [
        (kind, value)
        for kind, value in (
            (OwnerKind.SESSION, sessionId),
            (OwnerKind.TURN, turnId),
            (OwnerKind.AGENT, agentId),
        )
        if value is not None
    ]
    rows = await asyncio.to_thread(list_attempts, store, owners=owners, site=site, limit=limit)
    return AttemptList(attempts=[AttemptOut.of(r) for r in rows])
