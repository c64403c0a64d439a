"""Pydantic contracts for payloads that cross Temporal (one typed input/output per call)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class JournalEventIn(BaseModel):
    type: str
    data: dict[str, Any] = Field(default_factory=dict)
    originator: str | None = None


class AppendEventsInput(BaseModel):
    """Append `events` to `stream` with contiguous seqs.

    `dedupe_key` makes a retried activity idempotent: when the last events of
    the stream already carry it, nothing is appended twice.
    """

    stream: str
    events: list[JournalEventIn]
    retention: int | None = None
    dedupe_key: str | None = None


class AppendEventsResult(BaseModel):
    first_seq: int
    last_seq: int
