"""The one store of approvals: every request agentrt makes of a human, whatever its kind.

Each kind keeps its own record in its spec's shape (a session's permission request in its
workflow and journal, a standing agent's decision in `attention_requests`, a research
authorization in the investigation store, a device flow in its workflow); the `approvals`
row is the request's lifecycle beside it: who asked, what exactly, until when, who
answered, and why it ended (runtime/approvals/ledger.py writes it, in the same transaction
as the kind's own write where there is one).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Index
from sqlmodel import Field, SQLModel


def _ts(nullable: bool = False) -> Any:
    return Field(
        default=None if nullable else ...,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


class Approval(SQLModel, table=True):
    """One request for a human (`approval_id` is `<kind>:<the kind's own id>`)."""

    __tablename__ = "approvals"
    __table_args__ = (
        Index("ix_approvals_tenant_state", "tenant", "state", "created_at"),
        Index("ix_approvals_subject_state", "subject", "state"),
    )

    approval_id: str = Field(primary_key=True, max_length=200)
    kind: str = Field(max_length=40)
    # The kind's own id: the permission's requestId, the decision's id, the research's
    # id, the device flow's id.
    ref: str = Field(max_length=120)
    tenant: str = Field(max_length=200)
    # What the request waits in (`session/<id>`, `agent/<tenant>/<instance>`, ...): when
    # that ends, its pending approvals are superseded.
    subject: str = Field(max_length=400)
    # Who asked (`agent/<tenant>/<instance>`, `session/<id>`, `coder:<token>`, ...).
    asked_by: str = Field(max_length=200)
    title: str = Field(max_length=500)
    # What exactly is asked: the preview the human is shown (options, tool call, ...).
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # A tool call's digest (runtime/approvals/binding.py), when the approval binds one.
    digest: str | None = Field(default=None, max_length=80)
    # The route that answers it in its kind's own protocol.
    link: str = Field(max_length=500)
    state: str = Field(max_length=20)
    created_at: datetime = _ts()
    expires_at: datetime | None = _ts(nullable=True)
    # The kind's timeout, given by the approvals' clock (runtime/approvals/clock.py) just
    # after the request opened: None until then, 0 for none. A kind that keeps its own
    # timer (a session vote, a device flow) sets `expires_at` itself.
    timeout_ms: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    # When `approval.expiring` was owed (once, `approval_expiring_lead_ms` before expiry).
    warned_at: datetime | None = _ts(nullable=True)
    # The answer (an option id, `approve`, `reject`, ...) and the verified identity that
    # gave it (a token's name and role, `admin`, `loopback`); `answered_client` is the
    # self-declared client id of the session protocol's votes, beside it.
    answer: str | None = Field(default=None, max_length=200)
    answered_by: str | None = Field(default=None, max_length=200)
    answered_client: str | None = Field(default=None, max_length=200)
    ended_at: datetime | None = _ts(nullable=True)
    # Why it ended, in words (`answered`, `timeout`, `prompt cancelled`, `agent stopped`).
    end_reason: str | None = Field(default=None, max_length=200)
