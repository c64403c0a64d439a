"""The operation ledger: side effects recorded with their operation id, so a retry finds them.

Temporal retries an activity whose worker died or stalled, and the new attempt
cannot know whether the old one's effect happened. Every effect therefore runs
under an operation id chosen when the workflow decided it (stable across
retries): `begin` records the intent (and, for a file, the pre- and post-image
hashes and the result to report) before the effect, `finish` marks it done
after. A retry reads the record and either returns the recorded result, or
completes an effect it can prove (a file showing its post-image), or reports
that the outcome is unknown (a command that may or may not have run).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import JSON, Column, DateTime
from sqlmodel import Field, Session, SQLModel

from runtime.store.engine import Store

OperationState = Literal["started", "done"]


class Operation(SQLModel, table=True):
    """One side effect: `started` before it is attempted, `done` once its result is known."""

    __tablename__ = "operation"

    op_id: str = Field(primary_key=True, max_length=400)
    kind: str = Field(max_length=40)
    state: str = Field(max_length=20)
    pre_hash: str | None = Field(default=None, max_length=80)
    post_hash: str | None = Field(default=None, max_length=80)
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    started_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    finished_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class OperationLedger:
    """Reads and writes `Operation` rows; each call is one short transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, op_id: str) -> Operation | None:
        with self.store.session() as db:
            row: Operation | None = db.get(Operation, op_id)
            return row

    def begin(
        self,
        op_id: str,
        kind: str,
        *,
        pre_hash: str | None = None,
        post_hash: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> Operation:
        """Record the intent; returns the existing record when another attempt got there first."""
        started_at = datetime.now(UTC)

        def write(db: Session) -> Operation:
            existing = db.get(Operation, op_id)
            if existing is not None:
                return existing
            row = Operation(
                op_id=op_id,
                kind=kind,
                state="started",
                pre_hash=pre_hash,
                post_hash=post_hash,
                result=result,
                started_at=started_at,
            )
            db.add(row)
            db.flush()
            db.refresh(row)  # as stored, as a later attempt reads it
            return row

        # Of two attempts beginning at once, the one that loses the insert runs again and
        # returns the winner's record.
        return self.store.run_transaction(write)

    def finish(self, op_id: str, result: dict[str, Any]) -> None:
        """Mark the effect done with the result every later attempt returns."""
        with self.store.transaction() as db:
            row = db.get(Operation, op_id)
            assert row is not None, f"finish of an operation never begun: {op_id}"
            row.state = "done"
            row.result = result
            row.finished_at = datetime.now(UTC)
            db.add(row)
