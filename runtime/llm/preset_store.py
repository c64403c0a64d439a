"""Presets of the model-routing configuration (issue 11): the built-in `settings` one (the
deployment's model on the `settings` provider) and the stored `llm_preset` rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel
from sqlmodel import col, select

from runtime.llm.active import active_model
from runtime.llm.config_errors import (
    InvalidPreset,
    PresetInUse,
    ReservedId,
    UnknownProvider,
    check_id,
)
from runtime.llm.contracts import (
    SETTINGS_PRESET,
    SETTINGS_PROVIDER,
    ChainEntry,
    Overlay,
    PresetConfig,
)
from runtime.llm.models import LlmPreset, LlmSiteBinding
from runtime.llm.provider_store import provider_config
from runtime.settings import Settings
from runtime.standing_agents.models import AgentModeRow
from runtime.store.engine import Store

MAX_FALLBACK = 10


def settings_preset(settings: Settings) -> PresetConfig:
    return PresetConfig(
        preset_id=SETTINGS_PRESET,
        model=active_model(settings).model_id,
        provider=SETTINGS_PROVIDER,
    )


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
        ApplicationError: a reserved or malformed id, an empty model, too long a
            fallback chain (`invalid_preset`), or an unknown provider (400
            `unknown_provider`).
    """
    check_id("presetId", preset_id)
    if preset_id == SETTINGS_PRESET:
        raise ReservedId(what="preset", name=preset_id).application_error()
    if len(fallback) > MAX_FALLBACK:
        raise InvalidPreset(reason=f"at most {MAX_FALLBACK} fallback entries").application_error()
    for entry in [ChainEntry(model=model, provider=provider), *fallback]:
        if not entry.model.strip() or len(entry.model) > 200:
            raise InvalidPreset(reason="a model name is 1 to 200 characters").application_error()
        if provider_config(store, settings, entry.provider) is None:
            raise UnknownProvider(provider_id=entry.provider, status=400).application_error()
    row = LlmPreset(
        preset_id=preset_id,
        model=model,
        provider=provider,
        overlay=overlay.model_dump(by_alias=True, exclude_none=True) if overlay else None,
        fallback=[e.model_dump() for e in fallback],
        updated_at=now,
    )
    store.run_transaction(lambda db: db.merge(row))  # a racing first save: last wins
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
    """Remove a preset no site is bound to and no standing agents' mode names; False when
    there was none.

    Raises:
        ApplicationError: `reserved_id` (`settings`), `preset_in_use` (409) naming the
            sites bound to it (`sites`) and the modes that use it (`modes`,
            `<agentType>/<mode>`).
    """
    if preset_id == SETTINGS_PRESET:
        raise ReservedId(what="preset", name=preset_id).application_error()
    with store.transaction() as db:
        row = db.get(LlmPreset, preset_id)
        if row is None:
            return False
        bound = db.exec(
            select(LlmSiteBinding).where(col(LlmSiteBinding.preset_id) == preset_id)
        ).all()
        modes = sorted(
            f"{m.agent_type}/{m.name}"
            for m in db.exec(
                select(AgentModeRow).where(col(AgentModeRow.preset_id) == preset_id)
            ).all()
        )
        if bound or modes:
            sites = sorted(b.site_id for b in bound)
            raise PresetInUse(preset_id=preset_id, sites=sites, modes=modes).application_error()
        db.delete(row)
        return True
