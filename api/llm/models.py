"""Wire bodies of the model-routing routes (issue 11's field names, camelCase).

No response model has a field for a key: a provider shows its credentials' aliases,
their kind, and the name an `apiKeyEnv` or `deviceFlow` credential points to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StrictFloat, model_validator

from runtime.llm.attempt_log import wire_outcome
from runtime.llm.config_store import ProviderView
from runtime.llm.contracts import (
    AttemptOutcome,
    ChainEntry,
    CredentialConfig,
    Overlay,
    PresetConfig,
    PriceSource,
    ResolvedSite,
    UsageSource,
)
from runtime.llm.models import LlmCallAttempt
from runtime.timestamps import iso_ms
from runtime.wire import WireBody, WireModel

ModelName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
ProviderRef = Annotated[str, Field(min_length=1, max_length=100)]
PerMTok = Annotated[StrictFloat, Field(ge=0, le=1_000_000)]

# -- requests ---------------------------------------------------------------------------------


class CredentialBody(WireBody):
    """One credential: its alias and exactly one of apiKey, apiKeyEnv, deviceFlow."""

    alias: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")
    api_key: str | None = Field(default=None, min_length=1, max_length=4000)
    api_key_env: str | None = Field(default=None, max_length=200)
    device_flow: str | None = Field(default=None, min_length=1, max_length=100)

    @model_validator(mode="after")
    def _exactly_one(self) -> CredentialBody:
        given = [v for v in (self.api_key, self.api_key_env, self.device_flow) if v is not None]
        if len(given) != 1:
            raise ValueError(
                f"credential {self.alias!r} needs exactly one of apiKey, apiKeyEnv, deviceFlow"
            )
        return self

    def config(self) -> CredentialConfig:
        return CredentialConfig(
            alias=self.alias,
            api_key=self.api_key,
            api_key_env=self.api_key_env,
            device_flow=self.device_flow,
        )


class ProviderBody(WireBody):
    base_url: str = Field(min_length=1, max_length=2000)
    credentials: list[CredentialBody] = Field(default_factory=list, max_length=20)


class OverlayBody(WireBody):
    system_prompt_suffix: str | None = Field(default=None, max_length=20_000)
    temperature: StrictFloat | None = Field(default=None, ge=0, le=2)
    max_output_tokens: int | None = Field(default=None, ge=1, le=10_000_000)

    def config(self) -> Overlay:
        return Overlay(
            system_prompt_suffix=self.system_prompt_suffix,
            temperature=self.temperature,
            max_output_tokens=self.max_output_tokens,
        )


class ChainEntryBody(WireBody):
    model: ModelName
    provider: ProviderRef


class PresetBody(WireBody):
    model: ModelName
    provider: ProviderRef
    overlay: OverlayBody | None = None
    fallback: list[ChainEntryBody] = Field(default_factory=list, max_length=10)


class SitePresetBody(WireBody):
    preset_id: str = Field(min_length=1, max_length=100)


class PriceBody(WireBody):
    # `MTok` keeps its capital T on the wire: to_camel would say `inputPerMtokUsd`.
    input_per_mtok_usd: PerMTok = Field(alias="inputPerMTokUsd")
    output_per_mtok_usd: PerMTok = Field(alias="outputPerMTokUsd")
    cached_input_per_mtok_usd: PerMTok | None = Field(default=None, alias="cachedInputPerMTokUsd")


# -- responses --------------------------------------------------------------------------------


def _iso(ts: datetime | None) -> str | None:
    return iso_ms(ts) if ts is not None else None


class CredentialOut(WireModel):
    alias: str
    kind: Literal["apiKey", "apiKeyEnv", "deviceFlow"]
    api_key_env: str | None = Field(description="The environment variable an apiKeyEnv names.")
    device_flow: str | None = Field(description="The device-flow provider a deviceFlow names.")


class ProviderOut(WireModel):
    provider_id: str
    kind: Literal["openai", "scripted"]
    base_url: str | None
    credentials: list[CredentialOut]
    built_in: bool = Field(description="The deployment's settings (read-only).")
    updated_at: str | None

    @classmethod
    def of(cls, view: ProviderView) -> ProviderOut:
        return cls(
            provider_id=view.provider_id,
            kind=view.kind,
            base_url=view.base_url,
            credentials=[
                CredentialOut(
                    alias=c.alias, kind=c.kind, api_key_env=c.api_key_env, device_flow=c.device_flow
                )
                for c in view.credentials
            ],
            built_in=view.built_in,
            updated_at=_iso(view.updated_at),
        )


class ProviderList(WireModel):
    providers: list[ProviderOut]


class OverlayOut(WireModel):
    system_prompt_suffix: str | None
    temperature: float | None
    max_output_tokens: int | None


class ChainEntryOut(WireModel):
    model: str
    provider: str


class PresetOut(WireModel):
    preset_id: str
    model: str
    provider: str
    overlay: OverlayOut | None
    fallback: list[ChainEntryOut]
    built_in: bool = Field(description="The deployment's settings (read-only).")
    updated_at: str | None

    @classmethod
    def of(cls, preset: PresetConfig, built_in: bool, updated_at: datetime | None) -> PresetOut:
        overlay = preset.overlay
        return cls(
            preset_id=preset.preset_id,
            model=preset.model,
            provider=preset.provider,
            overlay=OverlayOut(
                system_prompt_suffix=overlay.system_prompt_suffix,
                temperature=overlay.temperature,
                max_output_tokens=overlay.max_output_tokens,
            )
            if overlay is not None
            else None,
            fallback=[_entry(e) for e in preset.fallback],
            built_in=built_in,
            updated_at=_iso(updated_at),
        )


def _entry(entry: ChainEntry) -> ChainEntryOut:
    return ChainEntryOut(model=entry.model, provider=entry.provider)


class PresetList(WireModel):
    presets: list[PresetOut]


class SiteOut(WireModel):
    site_id: str
    parent: str | None
    preset_id: str | None = Field(description="The site's own binding (null: it inherits).")
    resolved_preset_id: str
    resolved_from: str = Field(description="The site whose binding is in force.")

    @classmethod
    def of(cls, site: ResolvedSite) -> SiteOut:
        return cls(
            site_id=site.site_id,
            parent=site.parent,
            preset_id=site.preset_id,
            resolved_preset_id=site.resolved_preset_id,
            resolved_from=site.resolved_from,
        )


class SiteList(WireModel):
    sites: list[SiteOut]


class PriceOut(WireModel):
    model: str
    input_per_mtok_usd: float = Field(alias="inputPerMTokUsd")
    output_per_mtok_usd: float = Field(alias="outputPerMTokUsd")
    cached_input_per_mtok_usd: float | None = Field(alias="cachedInputPerMTokUsd")
    version: str = Field(
        description="The price's version, recorded on every attempt it charges: \"genai-prices "
        '<version>" or "override:<updated at>".'
    )
    source: Literal["override", "genai-prices"]


class AttemptOwner(WireModel):
    kind: str = Field(description='"session", "turn" or "agent".')
    id: str


class AttemptOut(WireModel):
    attempt_id: str
    site: str
    preset_id: str | None
    fallback_step: int
    provider: str
    credential_alias: str | None
    requested_model: str
    served_model: str | None
    outcome: AttemptOutcome = Field(
        description="How the attempt ended. An attempt still running is not listed yet; one "
        "whose worker died is a timeout."
    )
    http_status: int | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    reserved_usd: float = Field(
        default=0.0,
        description="What a caller with a dollar budget (a standing agent) held for the "
        "attempt's worst case before sending it; counted as spend while the outcome is a "
        "timeout (spend unknown).",
    )
    price_version: str | None
    price_source: PriceSource | None = Field(
        description='Whose price `costUsd` is at: "served" (the served model\'s), "requested" '
        '(the served model has none: the requested model\'s), "default" (neither has one: '
        'the deployment\'s default price) or "builtin" (the built-in scripted model, free); '
        "null for a failed attempt or one recorded before it was kept."
    )
    usage_source: UsageSource | None = Field(
        description='Whose token counts: "reported" (the provider\'s) or "estimated" (the '
        "provider reported none: counted from the text, 4 characters a token); null as "
        "priceSource."
    )
    duration_ms: int
    created_at: str
    owner: AttemptOwner

    @classmethod
    def of(cls, row: LlmCallAttempt) -> AttemptOut:
        return cls(
            attempt_id=row.attempt_id,
            site=row.site,
            preset_id=row.preset_id,
            fallback_step=row.fallback_step,
            provider=row.provider,
            credential_alias=row.credential_alias,
            requested_model=row.requested_model,
            served_model=row.served_model,
            outcome=wire_outcome(row),
            http_status=row.http_status,
            tokens_in=row.tokens_in,
            tokens_out=row.tokens_out,
            cost_usd=row.cost_usd,
            reserved_usd=row.reserved_usd,
            price_version=row.price_version,
            price_source=PriceSource(row.price_source) if row.price_source else None,
            usage_source=UsageSource(row.usage_source) if row.usage_source else None,
            duration_ms=row.duration_ms,
            created_at=iso_ms(row.created_at),
            owner=AttemptOwner(kind=row.owner_kind, id=row.owner_id),
        )


class AttemptList(WireModel):
    attempts: list[AttemptOut]
