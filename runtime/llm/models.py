"""Tables of model-call provenance: one snapshot per logical call, one row per attempt.

Every model call agentrt makes on behalf of an owner (a standing agent's tick, a
session prompt, an agent-tools turn) writes a `llm_call` snapshot, and each attempt
against a provider (failed ones included) a `llm_call_attempt`, with requested vs
served model, tokens and the cost agentrt computed at the served model's price
(the model never reports its own cost; runtime/llm/pricing.py for a model without one),
with where the price and the token counts came from. Spend is the sum of the attempts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Float, Index
from sqlmodel import Field, SQLModel


class LlmCall(SQLModel, table=True):
    """A logical model call; `call_id` is its operation id (a retry finds its reply)."""

    __tablename__ = "llm_call"
    __table_args__ = (Index("ix_llm_call_owner", "owner_kind", "owner_id"),)

    call_id: str = Field(primary_key=True, max_length=400)
    tenant: str | None = Field(default=None, max_length=200)
    owner_kind: str = Field(max_length=40)  # "agent" | "session" | "turn"
    owner_id: str = Field(max_length=400)
    site: str = Field(max_length=120)
    purpose: str = Field(max_length=60)  # e.g. "AgentPlanning"
    requested_model: str | None = Field(default=None, max_length=200)
    served_model: str | None = Field(default=None, max_length=200)
    outcome: str = Field(max_length=40)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = Field(default=0.0, sa_column=Column(Float, nullable=False, default=0.0))
    # The reply, so that a retried activity returns it instead of paying twice.
    reply: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class LlmCallAttempt(SQLModel, table=True):
    """One attempt of a call against one provider credential, whatever its outcome."""

    __tablename__ = "llm_call_attempt"
    __table_args__ = (
        Index("ix_llm_attempt_call", "call_id", "ordinal"),
        Index("ix_llm_attempt_owner", "owner_kind", "owner_id", "created_at"),
        Index("ix_llm_attempt_tenant", "tenant", "created_at"),
    )

    attempt_id: str = Field(primary_key=True, max_length=400)
    call_id: str = Field(max_length=400)
    ordinal: int = 0
    tenant: str | None = Field(default=None, max_length=200)
    owner_kind: str = Field(max_length=40)
    owner_id: str = Field(max_length=400)
    site: str = Field(max_length=120)
    preset_id: str | None = Field(default=None, max_length=200)
    fallback_step: int = 0
    provider: str = Field(max_length=200)
    credential_alias: str | None = Field(default=None, max_length=200)
    requested_model: str = Field(max_length=200)
    served_model: str | None = Field(default=None, max_length=200)
    # "ok" | "rate_limited" | "auth_error" | "server_error" | "timeout" | "bad_request"
    outcome: str = Field(max_length=40)
    http_status: int | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = Field(default=0.0, sa_column=Column(Float, nullable=False, default=0.0))
    # What a caller with a dollar budget held for the attempt's worst case before sending
    # it (runtime/llm/reservation.py): counted as spend while the outcome is unknown.
    reserved_usd: float = Field(
        default=0.0, sa_column=Column(Float, nullable=False, default=0.0, server_default="0")
    )
    price_version: str | None = Field(default=None, max_length=80)
    # Of a success: whose price it was charged at ("served" | "requested" | "default" |
    # "builtin") and whose token counts ("reported" | "estimated"). NULL on a failed
    # attempt, and on rows recorded before agentrt kept them (migration 0009).
    price_source: str | None = Field(default=None, max_length=20)
    usage_source: str | None = Field(default=None, max_length=20)
    duration_ms: int = 0
    error: str | None = Field(default=None, max_length=2000)
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


# -- live model routing configuration (issue 11): providers, presets, site bindings, prices --


class LlmProvider(SQLModel, table=True):
    """A named OpenAI-compatible endpoint; `credentials` in order, keys stored, never shown."""

    __tablename__ = "llm_provider"

    provider_id: str = Field(primary_key=True, max_length=100)
    base_url: str = Field(max_length=2000)
    # [{"alias", "apiKey" | "apiKeyEnv" | "deviceFlow"}], as runtime.llm.contracts.CredentialConfig.
    credentials: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class LlmPreset(SQLModel, table=True):
    """A model on a provider, an optional overlay and a fallback chain of (model, provider)."""

    __tablename__ = "llm_preset"

    preset_id: str = Field(primary_key=True, max_length=100)
    model: str = Field(max_length=200)
    provider: str = Field(max_length=100)
    overlay: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    fallback: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class LlmSiteBinding(SQLModel, table=True):
    """A call site's own preset; a site without a row inherits its parent's."""

    __tablename__ = "llm_site_binding"

    site_id: str = Field(primary_key=True, max_length=120)
    preset_id: str = Field(max_length=100)
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class LlmPrice(SQLModel, table=True):
    """An operator's price for a model, in dollars per million tokens; wins over the bundle."""

    __tablename__ = "llm_price"

    model: str = Field(primary_key=True, max_length=200)
    input_per_mtok_usd: float = Field(sa_column=Column(Float, nullable=False))
    output_per_mtok_usd: float = Field(sa_column=Column(Float, nullable=False))
    cached_input_per_mtok_usd: float | None = Field(
        default=None, sa_column=Column(Float, nullable=True)
    )
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
