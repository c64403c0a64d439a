"""What the approvals' inbox gives a feature that answers one of its kinds: the contract.

A feature whose requests for a human are in the inbox (runtime/approvals/ledger.py,
`ApprovalKind`) answers them by an `Answerer`, next to the operation it runs, and lists it
in its `api/<feature>/__init__.py` (`approval_answerers()`); api/app.py collects them into
`app.state.approval_answerers`, one per kind. The inbox (api/approvals/routes.py) reads the
approval, checks who answers, runs the kind's answerer, then reads the record it left.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias

from fastapi import Request
from pydantic import Field

from api.temporal import TemporalConnector
from runtime.approvals.binding import DIGEST_PATTERN
from runtime.approvals.models import Approval
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.tenants.tokens import Identity
from runtime.wire import WireBody


class AnswerBody(WireBody):
    # The kind's own vocabulary: a permission's optionId; `approve` or `deny` for a
    # research; `approve`, `reject` or free text for a decision (an MCP call, a coder's
    # question); `deny` for a device login.
    answer: str = Field(min_length=1, max_length=4000)
    note: str | None = Field(default=None, max_length=2000)
    # An MCP call's digest, as shown: refused (409 approval_digest_mismatch) otherwise.
    digest: str | None = Field(default=None, pattern=DIGEST_PATTERN)


@dataclass(frozen=True)
class Answering:
    """What an answer needs: the request it came in, the deployment's store, journal,
    settings and Temporal, and who answers (the verified identity, and its name)."""

    request: Request
    store: Store
    journal: EventJournal
    settings: Settings
    connector: TemporalConnector
    identity: Identity | None
    answered_by: str


# The kind's own operation, as its own route runs it, for a pending approval of that kind:
# an `ApiError` (or a Temporal `ApplicationError`) it raises is the answer's refusal.
Answerer: TypeAlias = Callable[[Answering, Approval, AnswerBody], Awaitable[None]]
