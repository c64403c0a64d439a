"""Tables of the store. Every change here gets an Alembic revision in runtime/migrations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Index, UniqueConstraint
from sqlmodel import Field, SQLModel


class JournalStream(SQLModel, table=True):
    """One row per stream: the allocator of `seq` and the retention low-water mark."""

    __tablename__ = "journal_stream"

    stream: str = Field(primary_key=True, max_length=400)
    last_seq: int = Field(default=0, sa_column=Column(BigInteger, nullable=False, default=0))
    # Smallest seq still stored; last_seq + 1 while the stream is empty.
    earliest_seq: int = Field(default=1, sa_column=Column(BigInteger, nullable=False, default=1))


class JournalEvent(SQLModel, table=True):
    """The append-only event journal: (stream, seq) is unique, seq starts at 1."""

    __tablename__ = "journal_event"
    __table_args__ = (
        UniqueConstraint("stream", "seq", name="uq_journal_event_stream_seq"),
        Index("ix_journal_event_stream_seq", "stream", "seq"),
        UniqueConstraint("stream", "dedupe_key", name="uq_journal_event_stream_dedupe"),
    )

    id: int | None = Field(default=None, primary_key=True)
    stream: str = Field(max_length=400)
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    type: str = Field(max_length=200)
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    originator: str | None = Field(default=None, max_length=200)
    # Set on the first event of an idempotent batch; a retried append finds it.
    dedupe_key: str | None = Field(default=None, max_length=400)
    ts: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
