"""Gateway tables: call records with their results, turns, browser sessions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


class AgentToolCall(SQLModel, table=True):
    """A call and its result; the FIFO window per (instance, workspace) evicts the oldest."""

    __tablename__ = "agent_tool_call"
    __table_args__ = (
        UniqueConstraint("instance", "workspace", "idempotency_key", name="uq_agent_call_key"),
        UniqueConstraint("result_id", name="uq_agent_call_result"),
        Index("ix_agent_call_scope", "instance", "workspace", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    instance: str = Field(max_length=100)
    workspace: str = Field(max_length=200)
    turn_id: str = Field(max_length=200)
    call_id: str = Field(max_length=64)
    result_id: str = Field(max_length=64)
    tool_id: str = Field(max_length=200)
    idempotency_key: str = Field(max_length=400)
    intent_hash: str = Field(max_length=64)
    status: str = Field(max_length=40)
    result: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class AgentTurn(SQLModel, table=True):
    """A turn's identity: which workspace it belongs to, which workflow runs it."""

    __tablename__ = "agent_turn"

    instance: str = Field(primary_key=True, max_length=100)
    workspace: str = Field(primary_key=True, max_length=200)
    turn_id: str = Field(primary_key=True, max_length=200)
    agent: str = Field(max_length=40)
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    workflow_id: str = Field(max_length=600)
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class AgentToolsBrowserSession(SQLModel, table=True):
    """A browser's local session: the cookie's hash and its CSRF token."""

    __tablename__ = "agent_tools_session"

    session_hash: str = Field(primary_key=True, max_length=64)
    csrf_token: str = Field(max_length=100)
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    expires_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
