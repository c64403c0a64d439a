"""Model-call provenance for standing agents: the `llm_call` snapshot and its attempts.

The snapshot is keyed by the call's operation id and stores the reply, so a
retried model-step activity returns the stored reply instead of paying twice.
Every attempt, failed ones included, is a `llm_call_attempt` row: spend is their sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from runtime.llm.contracts import ModelReply
from runtime.llm.models import LlmCall, LlmCallAttempt
from runtime.standing_agents.ticks import OWNER_KIND
from runtime.store.engine import Store

PURPOSE = "AgentPlanning"
# An attempt between its HTTP request and its answer. A worker killed meanwhile leaves
# it so; the retry marks it ORPHANED (spend unknown) rather than leaving no record.
IN_FLIGHT = "in_flight"
ORPHANED = "timeout"


@dataclass(frozen=True)
class CallOwner:
    call_id: str
    tenant: str
    instance_id: str
    site: str
    provider: str
    requested_model: str


def stored_reply(store: Store, call_id: str) -> tuple[ModelReply, float] | None:
    with store.session() as db:
        row = db.get(LlmCall, call_id)
        if row is None or row.reply is None:
            return None
        return ModelReply.model_validate(row.reply), float(row.cost_usd)


def begin_attempt(store: Store, owner: CallOwner, *, attempt: int, now: datetime) -> None:
    """Before the HTTP call: earlier attempts still in flight died with their worker."""
    with store.session() as db:
        db.execute(
            update(LlmCallAttempt)
            .where(
                col(LlmCallAttempt.call_id) == owner.call_id,
                col(LlmCallAttempt.outcome) == IN_FLIGHT,
                col(LlmCallAttempt.ordinal) != attempt,
            )
            .values(outcome=ORPHANED, error="the worker died during the call: spend unknown")
        )
        db.merge(_attempt(owner, attempt, now, 0, outcome=IN_FLIGHT))
        db.commit()


def record_success(
    store: Store,
    owner: CallOwner,
    *,
    attempt: int,
    reply: ModelReply,
    cost_usd: float,
    price_version: str,
    duration_ms: int,
    now: datetime,
) -> None:
    """The attempt row and the snapshot with its reply, in one transaction."""
    row = _attempt(owner, attempt, now, duration_ms, outcome="ok")
    row.served_model = reply.served_model
    row.tokens_in = reply.usage.prompt_tokens
    row.tokens_out = reply.usage.completion_tokens
    row.cost_usd = cost_usd
    row.price_version = price_version
    with store.session() as db:
        # merge: a retried attempt that already wrote its rows overwrites them with the same.
        db.merge(row)
        db.merge(
            LlmCall(
                call_id=owner.call_id,
                tenant=owner.tenant,
                owner_kind=OWNER_KIND,
                owner_id=owner.instance_id,
                site=owner.site,
                purpose=PURPOSE,
                requested_model=owner.requested_model,
                served_model=reply.served_model,
                outcome="ok",
                tokens_in=reply.usage.prompt_tokens,
                tokens_out=reply.usage.completion_tokens,
                cost_usd=cost_usd,
                reply=reply.model_dump(mode="json"),
                created_at=now,
            )
        )
        db.commit()


def record_failure(
    store: Store,
    owner: CallOwner,
    *,
    attempt: int,
    outcome: str,
    http_status: int | None,
    error: str,
    duration_ms: int,
    now: datetime,
) -> None:
    row = _attempt(owner, attempt, now, duration_ms, outcome=outcome)
    row.http_status = http_status
    row.error = error[:2000]
    with store.session() as db:
        db.merge(row)
        try:
            db.commit()
        except IntegrityError:
            db.rollback()


def failure_outcome(status: int | None) -> str:
    if status is None:
        return "timeout"
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth_error"
    if status >= 500:
        return "server_error"
    return "bad_request"


def _attempt(
    owner: CallOwner, attempt: int, now: datetime, duration_ms: int, *, outcome: str
) -> LlmCallAttempt:
    return LlmCallAttempt(
        attempt_id=f"{owner.call_id}/a{attempt}",
        call_id=owner.call_id,
        ordinal=attempt,
        tenant=owner.tenant,
        owner_kind=OWNER_KIND,
        owner_id=owner.instance_id,
        site=owner.site,
        provider=owner.provider,
        requested_model=owner.requested_model,
        outcome=outcome,
        duration_ms=duration_ms,
        created_at=now,
    )
