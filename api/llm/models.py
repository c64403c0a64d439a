"""Wire bodies of the model-routing routes (issue 11's field names, camelCase).

No response model has a field for a key: a provider shows its credentials' aliases,
their kind, and the name an `apiKeyEnv` or `deviceFlow` credential points to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, model_validator

from runtime.llm.attempt_log import wire_outcome
from runtime.llm.config_store import ProviderView
from runtime.llm.contracts import UsageSource
from runtime.llm.models import LlmCallAttempt
from runtime.llm.routing import (
    AttemptOutcome,
    ChainEntry,
    CredentialConfig,
    Overlay,
    PresetConfig,
    PriceSource,
    ResolvedSite,
)
from runtime.timestamps import iso_ms

ModelName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]
ProviderRef = Annotated[str, Field(min_length=1, max_length=100)]
PerMTok = Annotated[StrictFloat, Field(ge=0, le=1_000_000)]

# -- requests ---------------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CredentialBody(_Body):
    """One credential: its alias and exactly one of apiKey, apiKeyEnv, deviceFlow."""

    alias: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")
    apiKey: str | None = Field(default=None, min_length=1, max_length=4000)
    apiKeyEnv: str | None = Field(default=None, max_length=200)
    deviceFlow: str | None = Field(default=None, min_length=1, max_length=100)

    @model_validator(mode="after")
    def _exactly_one(self) -> CredentialBody:
        given = [v for v in (self.apiKey, self.apiKeyEnv, self.deviceFlow) if v is not None]
        if len(given) != 1:
            raise ValueError(
                f"credential {self.alias!r} needs exactly one of apiKey, apiKeyEnv, deviceFlow"
            )
        return self

    def config(self) -> CredentialConfig:
        return CredentialConfig(
            alias=self.alias,
            apiKey=self.apiKey,
            apiKeyEnv=self.apiKeyEnv,
            deviceFlow=self.deviceFlow,
        )


class ProviderBody(_Body):
    baseUrl: str = Field(min_length=1, max_length=2000)
    credentials: list[CredentialBody] = Field(default_factory=list, max_length=20)


class OverlayBody(_Body):
    systemPromptSuffix: str | None = Field(default=None, max_length=20_000)
    temperature: StrictFloat | None = Field(default=None, ge=0, le=2)
    maxOutputTokens: int | None = Field(default=None, ge=1, le=10_000_000)

    def config(self) -> Overlay:
        return Overlay(
            systemPromptSuffix=self.systemPromptSuffix,
            temperature=self.temperature,
            maxOutputTokens=self.maxOutputTokens,
        )


class ChainEntryBody(_Body):
    model: ModelName
    provider: ProviderRef


class PresetBody(_Body):
    model: ModelName
    provider: ProviderRef
    overlay: OverlayBody | None = None
    fallback: list[ChainEntryBody] = Field(default_factory=list, max_length=10)


class SitePresetBody(_Body):
    presetId: str = Field(min_length=1, max_length=100)


class PriceBody(_Body):
    inputPerMTokUsd: PerMTok
    outputPerMTokUsd: PerMTok
    cachedInputPerMTokUsd: PerMTok | None = None


# -- responses --------------------------------------------------------------------------------


def _iso(ts: datetime | None) -> str | None:
    return iso_ms(ts) if ts is not None else None


class CredentialOut(BaseModel):
    alias: str
    kind: Literal["apiKey", "apiKeyEnv", "deviceFlow"]
    apiKeyEnv: str | None = Field(description="The environment variable an apiKeyEnv names.")
    deviceFlow: str | None = Field(description="The device-flow provider a deviceFlow names.")


class ProviderOut(BaseModel):
    providerId: str
    kind: Literal["openai", "scripted"]
    baseUrl: str | None
    credentials: list[CredentialOut]
    builtIn: bool = Field(description="The deployment's settings (read-only).")
    updatedAt: str | None

    @classmethod
    def of(cls, view: ProviderView) -> ProviderOut:
        return cls(
            providerId=view.provider_id,
            kind=view.kind,
            baseUrl=view.base_url,
            credentials=[
                CredentialOut(
                    alias=c.alias, kind=c.kind, apiKeyEnv=c.api_key_env, deviceFlow=c.device_flow
                )
                for c in view.credentials
            ],
            builtIn=view.built_in,
            updatedAt=_iso(view.updated_at),
        )


class ProviderList(BaseModel):
    providers: list[ProviderOut]


class OverlayOut(BaseModel):
    systemPromptSuffix: str | None
    temperature: float | None
    maxOutputTokens: int | None


class ChainEntryOut(BaseModel):
    model: str
    provider: str


class PresetOut(BaseModel):
    presetId: str
    model: str
    provider: str
    overlay: OverlayOut | None
    fallback: list[ChainEntryOut]
    builtIn: bool = Field(description="The deployment's settings (read-only).")
    updatedAt: str | None

    @classmethod
    def of(cls, preset: PresetConfig, built_in: bool, updated_at: datetime | None) -> PresetOut:
        overlay = preset.overlay
        return cls(
            presetId=preset.preset_id,
            model=preset.model,
            provider=preset.provider,
            overlay=OverlayOut(
                systemPromptSuffix=overlay.system_prompt_suffix,
                temperature=overlay.temperature,
                maxOutputTokens=overlay.max_output_tokens,
            )
            if overlay is not None
            else None,
            fallback=[_entry(e) for e in preset.fallback],
            builtIn=built_in,
            updatedAt=_iso(updated_at),
        )


def _entry(entry: ChainEntry) -> ChainEntryOut:
    return ChainEntryOut(model=entry.model, provider=entry.provider)


class PresetList(BaseModel):
    presets: list[PresetOut]


class SiteOut(BaseModel):
    siteId: str
    parent: str | None
    presetId: str | None = Field(description="The site's own binding (null: it inherits).")
    resolvedPresetId: str
    resolvedFrom: str = Field(description="The site whose binding is in force.")

    @classmethod
    def of(cls, site: ResolvedSite) -> SiteOut:
        return cls(
            siteId=site.site_id,
            parent=site.parent,
            presetId=site.preset_id,
            resolvedPresetId=site.resolved_preset_id,
            resolvedFrom=site.resolved_from,
        )


class SiteList(BaseModel):
    sites: list[SiteOut]


class PriceOut(BaseModel):
    model: str
    inputPerMTokUsd: float
    outputPerMTokUsd: float
    cachedInputPerMTokUsd: float | None
    version: str = Field(
        description="The price's version, recorded on every attempt it charges: \"genai-prices "
        '<version>" or "override:<updated at>".'
    )
    source: Literal["override", "genai-prices"]


class AttemptOwner(BaseModel):
    kind: str = Field(description='"session", "turn" or "agent".')
    id: str


class AttemptOut(BaseModel):
    attemptId: str
    site: str
    presetId: str | None
    fallbackStep: int
    provider: str
    credentialAlias: str | None
    requestedModel: str
    servedModel: str | None
    outcome: AttemptOutcome = Field(
        description="How the attempt ended. An attempt still running is not listed yet; one "
        "whose worker died is a timeout."
    )
    httpStatus: int | None
    tokensIn: int
    tokensOut: int
    costUsd: float
    reservedUsd: float = Field(
        default=0.0,
        description="What a caller with a dollar budget (a standing agent) held for the "
        "attempt's worst case before sending it; counted as spend while the outcome is a "
        "timeout (spend unknown).",
    )
    priceVersion: str | None
    priceSource: PriceSource | None = Field(
        description='Whose price `costUsd` is at: "served" (the served model\'s), "requested" '
        '(the served model has none: the requested model\'s), "default" (neither has one: '
        'the deployment\'s default price) or "builtin" (the built-in scripted model, free); '
        "null for a failed attempt or one recorded before it was kept."
    )
    usageSource: UsageSource | None = Field(
        description='Whose token counts: "reported" (the provider\'s) or "estimated" (the '
        "provider reported none: counted from the text, 4 characters a token); null as "
        "priceSource."
    )
    durationMs: int
    createdAt: str
    owner: AttemptOwner

    @classmethod
    def of(cls, row: LlmCallAttempt) -> AttemptOut:
        return cls(
            attemptId=row.attempt_id,
            site=row.site,
            presetId=row.preset_id,
            fallbackStep=row.fallback_step,
            provider=row.provider,
            credentialAlias=row.credential_alias,
            requestedModel=row.requested_model,
            servedModel=row.served_model,
            outcome=wire_outcome(row),
            httpStatus=row.http_status,
            tokensIn=row.tokens_in,
            tokensOut=row.tokens_out,
            costUsd=row.cost_usd,
            reservedUsd=row.reserved_usd,
            priceVersion=row.price_version,
            priceSource=PriceSource(row.price_source) if row.price_source else None,
            usageSource=UsageSource(row.usage_source) if row.usage_source else None,
            durationMs=row.duration_ms,
            createdAt=iso_ms(row.created_at),
            owner=AttemptOwner(kind=row.owner_kind, id=row.owner_id),
        )


class AttemptList(BaseModel):
    attempts: list[AttemptOut]
