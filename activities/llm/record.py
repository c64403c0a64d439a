"""Model-call provenance: the `llm_call` snapshot of a logical call and its attempts.

Written by the model gateway for every owner (a session prompt, an agent-tools turn, a
standing agent's tick). The snapshot is keyed by the call's operation id and stores the
reply, so a later attempt of the same call (a retry, or the chain's next attempt after a
worker died mid-call) returns the stored reply instead of paying twice. Every attempt,
failed ones included, is a `llm_call_attempt` row: spend is their sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import update
from sqlmodel import Session, col, select

from runtime.llm.attempt_log import IN_FLIGHT
from runtime.llm.contracts import AttemptOutcome, ModelReply, OwnerKind, PriceSource, UsageSource
from runtime.llm.models import LlmCall, LlmCallAttempt
from runtime.llm.pricing import AttemptCost
from runtime.llm.reservation import SpendGate, SpendRefusal, SpendRefused
from runtime.store.atomic import upsert
from runtime.store.engine import Store

# An attempt between its HTTP request and its answer (IN_FLIGHT, a state of the store,
# never an outcome on the wire: runtime/llm/attempt_log.py). A worker killed meanwhile
# leaves it so; the next attempt of the call marks it ORPHANED (spend unknown) rather
# than leaving no record.
ORPHANED = AttemptOutcome.TIMEOUT.value
ERROR_MAX = 2000
# `llm_call.purpose` of a standing agent's planning calls.
AGENT_PURPOSE = "AgentPlanning"


@dataclass(frozen=True)
class CallOwner:
    """Who the call is for and what it asks: the columns every attempt row repeats."""

    call_id: str
    tenant: str | None
    owner_kind: OwnerKind
    owner_id: str
    site: str
    provider: str
    requested_model: str
    purpose: str
    preset_id: str | None = None
    fallback_step: int = 0
    credential_alias: str | None = None


@dataclass(frozen=True)
class StoredSuccess:
    """A call's stored reply and the attempt that paid for it."""

    reply: ModelReply
    cost_usd: float
    attempt_id: str | None
    provider: str | None
    credential_alias: str | None
    price_source: PriceSource | None = None
    usage_source: UsageSource | None = None


def attempt_id(call_id: str, ordinal: int) -> str:
    return f"{call_id}/a{ordinal}"


def stored_reply(store: Store, call_id: str) -> tuple[ModelReply, float] | None:
    found = stored_success(store, call_id)
    return None if found is None else (found.reply, found.cost_usd)


def stored_success(store: Store, call_id: str) -> StoredSuccess | None:
    with store.session() as db:
        row = db.get(LlmCall, call_id)
        if row is None or row.reply is None:
            return None
        ok = db.exec(
            select(LlmCallAttempt)
            .where(col(LlmCallAttempt.call_id) == call_id, col(LlmCallAttempt.outcome) == "ok")
            .order_by(col(LlmCallAttempt.ordinal))
        ).first()
        return StoredSuccess(
            reply=ModelReply.model_validate(row.reply),
            cost_usd=float(row.cost_usd),
            attempt_id=ok.attempt_id if ok else None,
            provider=ok.provider if ok else None,
            credential_alias=ok.credential_alias if ok else None,
            price_source=PriceSource(ok.price_source) if ok and ok.price_source else None,
            usage_source=UsageSource(ok.usage_source) if ok and ok.usage_source else None,
        )


def begin_attempt(
    store: Store,
    owner: CallOwner,
    *,
    attempt: int,
    now: datetime,
    reserve_usd: float = 0.0,
    gate: SpendGate | None = None,
) -> SpendRefusal | None:
    """Before the HTTP call: earlier attempts still in flight died with their worker.

    With a `gate`, the attempt's in-flight row holds `reserve_usd` and is written only
    if the gate admits it, in the gate's transaction (runtime/llm/reservation.py); a
    refusal writes nothing and is returned."""
    try:
        with store.transaction() as db:
            if gate is not None:
                refusal = gate(db, reserve_usd, attempt_id(owner.call_id, attempt))
                if refusal is not None:
                    raise SpendRefused(refusal)  # rolls the gate's transaction back
            db.execute(
                update(LlmCallAttempt)
                .where(
                    col(LlmCallAttempt.call_id) == owner.call_id,
                    col(LlmCallAttempt.outcome) == IN_FLIGHT,
                    col(LlmCallAttempt.ordinal) != attempt,
                )
                .values(outcome=ORPHANED, error="the worker died during the call: spend unknown")
            )
            row = _attempt(owner, attempt, now, 0, outcome=IN_FLIGHT)
            row.reserved_usd = reserve_usd
            db.merge(row)
    except SpendRefused as refused:
        return refused.refusal
    return None


def record_success(
    store: Store,
    owner: CallOwner,
    *,
    attempt: int,
    reply: ModelReply,
    cost: AttemptCost,
    duration_ms: int,
    now: datetime,
    http_status: int | None = None,
) -> None:
    """The attempt row and the snapshot with its reply, in one transaction."""
    row = _attempt(owner, attempt, now, duration_ms, outcome=AttemptOutcome.OK.value)
    row.served_model = reply.served_model
    row.http_status = http_status
    row.tokens_in = reply.usage.prompt_tokens
    row.tokens_out = reply.usage.completion_tokens
    row.cost_usd = cost.cost_usd
    row.price_version = cost.price_version
    row.price_source = cost.price_source.value
    row.usage_source = reply.usage.source.value
    with store.transaction() as db:
        # merge: a retried attempt that already wrote its rows overwrites them with the same.
        db.merge(_keeping_reservation(db, row))
        db.merge(
            LlmCall(
                call_id=owner.call_id,
                tenant=owner.tenant,
                owner_kind=owner.owner_kind.value,
                owner_id=owner.owner_id,
                site=owner.site,
                purpose=owner.purpose,
                requested_model=owner.requested_model,
                served_model=reply.served_model,
                outcome=AttemptOutcome.OK.value,
                tokens_in=reply.usage.prompt_tokens,
                tokens_out=reply.usage.completion_tokens,
                cost_usd=cost.cost_usd,
                reply=reply.model_dump(mode="json"),
                created_at=now,
            )
        )


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
    cost_usd: float = 0.0,
) -> None:
    """A failed attempt; `cost_usd` what it is charged (0 unless a reply cut short after
    the server answered, under a budget: its reservation)."""
    row = _attempt(owner, attempt, now, duration_ms, outcome=outcome)
    row.http_status = http_status
    row.error = error[:ERROR_MAX]
    row.cost_usd = cost_usd
    with store.transaction() as db:
        if db.get(LlmCallAttempt, row.attempt_id) is not None:
            db.merge(_keeping_reservation(db, row))
        else:
            # The attempt's first row, unless a concurrent writer of the same attempt
            # inserts it first: then that row stands and this one is dropped (the no-op
            # update of its key).
            upsert(db, LlmCallAttempt, row.model_dump(), key=["attempt_id"], update=["attempt_id"])


def _keeping_reservation(db: Session, row: LlmCallAttempt) -> LlmCallAttempt:
    """The ended attempt keeps what its in-flight row held (on record; a reader of spend
    counts it only for an outcome whose spend is unknown)."""
    held = db.get(LlmCallAttempt, row.attempt_id)
    if held is not None:
        row.reserved_usd = held.reserved_usd
    return row


def failure_outcome(status: int | None, *, timed_out: bool = True) -> AttemptOutcome:
    """An HTTP status (None: no answer) as an attempt outcome."""
    if status is None:
        return AttemptOutcome.TIMEOUT if timed_out else AttemptOutcome.SERVER_ERROR
    if status == 429:
        return AttemptOutcome.RATE_LIMITED
    if status in (401, 403):
        return AttemptOutcome.AUTH_ERROR
    if status == 408:
        return AttemptOutcome.TIMEOUT
    if status >= 500:
        return AttemptOutcome.SERVER_ERROR
    return AttemptOutcome.BAD_REQUEST


def _attempt(
    owner: CallOwner, attempt: int, now: datetime, duration_ms: int, *, outcome: str
) -> LlmCallAttempt:
    return LlmCallAttempt(
        attempt_id=attempt_id(owner.call_id, attempt),
        call_id=owner.call_id,
        ordinal=attempt,
        tenant=owner.tenant,
        owner_kind=owner.owner_kind.value,
        owner_id=owner.owner_id,
        site=owner.site,
        preset_id=owner.preset_id,
        fallback_step=owner.fallback_step,
        provider=owner.provider,
        credential_alias=owner.credential_alias,
        requested_model=owner.requested_model,
        outcome=outcome,
        duration_ms=duration_ms,
        created_at=now,
    )
