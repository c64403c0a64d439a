"""Session tables: the registry of sessions (live or closed), the single-scope slot, and which
session raised each permission request."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, Index
from sqlmodel import Field, SQLModel


class DaemonSession(SQLModel, table=True):
    """A session of the daemon; `closed_at` set by DELETE (a later load revives it)."""

    __tablename__ = "daemon_session"
    # A workspace's live sessions (`closed_at` null), which the registry looks up.
    __table_args__ = (Index("ix_daemon_session_live", "workspace_cwd", "closed_at"),)

    session_id: str = Field(primary_key=True, max_length=64)
    workspace_cwd: str = Field(max_length=4096)
    scope: str = Field(max_length=20)
    display_name: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    closed_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class SessionClient(SQLModel, table=True):
    """A client attached to a session (`X-Qwen-Client-Id`), with its last heartbeat."""

    __tablename__ = "daemon_session_client"

    session_id: str = Field(primary_key=True, max_length=64)
    client_id: str = Field(primary_key=True, max_length=128)
    last_seen_ms: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, default=0))


class SingleSessionSlot(SQLModel, table=True):
    """The workspace's `single`-scope session: one row, so concurrent creates coalesce."""

    __tablename__ = "daemon_single_session"

    workspace_cwd: str = Field(primary_key=True, max_length=4096)
    session_id: str = Field(max_length=64)


class SessionPermissionRequest(SQLModel, table=True):
    """Which session raised permission request `request_id`: written with its
    `permission_request` event (runtime/sessions/registry.py `index_permission_requests`,
    a journal projection), read by the vote route that names the request alone."""

    __tablename__ = "session_permission_request"

    request_id: str = Field(primary_key=True, max_length=64)
    session_id: str = Field(max_length=64)
