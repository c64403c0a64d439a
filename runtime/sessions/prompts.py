"""Prompt texts, stored by the API before the prompt is submitted: workflows carry the id.

A prompt can be megabytes; workflow history (and gRPC's 4 MB message limit) must
never see it. SessionWorkflow keeps only the prompt id and a bounded preview; the
activities that need the text (the user message of the transcript and the
`user_message_chunk` event) read it here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Column, DateTime, Index, Text
from sqlmodel import Field, Session, SQLModel

from runtime.store.engine import Store

PREVIEW_CHARS = 2000


class SessionPrompt(SQLModel, table=True):
    __tablename__ = "session_prompt"
    __table_args__ = (Index("ix_session_prompt_session", "session_id"),)

    prompt_id: str = Field(primary_key=True, max_length=64)
    session_id: str = Field(max_length=64)
    text: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


def preview(text: str) -> str:
    """What history, status views and queue events carry of a prompt."""
    return text[:PREVIEW_CHARS]


def save_prompt(store: Store, session_id: str, prompt_id: str, text: str) -> None:
    """Store a prompt's text under its id. Idempotent: a prompt id derived from what it is
    for (agentrt's coder's task prompt) is saved again by a retried activity, and the
    first save stands (a concurrent save of the same id that wins the key stands too:
    the write runs again and finds it)."""

    def write(db: Session) -> None:
        if db.get(SessionPrompt, prompt_id) is not None:
            return
        db.add(
            SessionPrompt(
                prompt_id=prompt_id,
                session_id=session_id,
                text=text,
                created_at=datetime.now(UTC),
            )
        )
        db.flush()

    store.run_transaction(write)


def load_prompt(store: Store, prompt_id: str) -> str | None:
    with store.session() as db:
        row = db.get(SessionPrompt, prompt_id)
        return row.text if row is not None else None


def forget_prompt(store: Store, prompt_id: str) -> None:
    """Drop the text of a prompt that was never accepted (the submit failed)."""
    with store.transaction() as db:
        row = db.get(SessionPrompt, prompt_id)
        if row is not None:
            db.delete(row)
