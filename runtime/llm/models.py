"""Tables of model-call provenance: one snapshot per logical call, one row per attempt.

Every model call agentrt makes on behalf of an owner (a standing agent's tick, a
session prompt, an agent-tools turn) writes a `llm_call` snapshot, and each attempt
against a provider (failed ones included) a `llm_call_attempt`, with requested vs
served model, tokens and the cost agentrt computed at the served model's price
(the model never reports its own cost). Spend is the sum of the attempts.
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
    price_version: str | None = Field(default=None, max_length=80)
    duration_ms: int = 0
    error: str | None = Field(default=None, max_length=2000)
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
