"""`agent_tasks`: the coding tasks of a tenant, what clients read (the workflow
`coding-task/{tenant}/{taskId}` keeps the timers; every change is a compare-and-swap on
`state` here). Every change gets an Alembic revision in runtime/migrations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, Text
from sqlmodel import Field, SQLModel


def _ts(nullable: bool = False) -> Any:
    return Field(
        default=None if nullable else ...,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


class CodingTask(SQLModel, table=True):
    """A coding task: proposed by a SOA (`soa_propose_task`) or an operator, claimed by
    one coder (a compare-and-swap on `state`), settled once."""

    __tablename__ = "agent_tasks"
    __table_args__ = (
        Index("ix_agent_tasks_instance", "instance_id"),
        Index("ix_agent_tasks_tenant_state", "tenant", "state"),
    )

    task_id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=200)
    # The proposing agent (None for an operator's task).
    instance_id: str | None = Field(default=None, max_length=64)
    title: str = Field(max_length=500)
    # The instructions (the coder's prompt).
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    # agentrt's own coder: the session it runs in.
    session_id: str | None = Field(default=None, max_length=64)
    # Legacy (before coding tasks): `created`, `submitted`. Kept for old rows' readers.
    status: str = Field(default="created", max_length=40)
    op_id: str | None = Field(default=None, max_length=400, unique=True)
    created_at: datetime = _ts()
    # -- coding tasks (revision 0011) -------------------------------------------------------
    state: str = Field(default="open", max_length=20)
    capabilities: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    workspace: str | None = Field(default=None, max_length=4096)
    preset_id: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=200)
    provider: str | None = Field(default=None, max_length=200)
    approval_mode: str | None = Field(default=None, max_length=40)
    proposed_by: str = Field(default="", max_length=200)
    holder: str | None = Field(default=None, max_length=200)
    claimed_at: datetime | None = _ts(nullable=True)
    heartbeat_at: datetime | None = _ts(nullable=True)
    deadline: datetime | None = _ts(nullable=True)
    notes: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    outcome: str | None = Field(default=None, max_length=20)
    summary: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    artifacts: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    settled_at: datetime | None = _ts(nullable=True)
    settled_by: str | None = Field(default=None, max_length=200)
    updated_at: datetime | None = _ts(nullable=True)
