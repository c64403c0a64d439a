"""Idempotent tool calls: one record per idempotency key, the result stored with it.

A replay with the same key and the same intent returns the stored result without
running the tool again; the same key with another intent is a conflict (409).
The tool's own writes (e.g. a prepared research) and the call record commit in
one transaction, so a crash leaves either both or neither.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, cast

from sqlalchemy import delete, select
from sqlmodel import Session

from runtime.agent_tools.contracts import CallRequest
from runtime.agent_tools.models import AgentToolCall
from runtime.agent_tools.views import CallResult, ToolResult
from runtime.failures import WireError
from runtime.investigation.outcomes import ToolOutcome, ToolStatus
from runtime.investigation.tools import run_tool
from runtime.store import Store
from runtime.timestamps import iso_ms

DEFAULT_MAX_RESULTS = 64
_CALLS = AgentToolCall.__table__  # type: ignore[attr-defined]


class IdempotencyConflict(WireError):
    """The key was already used for another intent: 409. An activity that meets it retries,
    as it did when this was a plain exception."""

    kind: Literal["idempotency_conflict"] = "idempotency_conflict"
    retryable: ClassVar[bool] = True
    idempotency_key: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"idempotency_key {self.idempotency_key!r} was already used for another call",
            "code": self.kind_name,
            "idempotency_key": self.idempotency_key,
        }


@dataclass(frozen=True)
class CallRecord:
    call_id: str
    result_id: str
    turn_id: str
    tool_id: str
    status: str
    outcome: ToolOutcome
    replayed: bool
    created_at: datetime


def intent_hash(call: CallRequest) -> str:
    """What a call means: which tool, on what input, for which turn and objects."""
    intent = {
        "turn_id": call.turn_id,
        "tool_id": call.tool_id,
        "input": call.input,
        "object_refs": [ref.model_dump() for ref in call.object_refs],
    }
    encoded = json.dumps(intent, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


def _record(row: AgentToolCall, replayed: bool) -> CallRecord:
    return CallRecord(
        call_id=row.call_id,
        result_id=row.result_id,
        turn_id=row.turn_id,
        tool_id=row.tool_id,
        status=row.status,
        outcome=ToolOutcome.model_validate(row.result),
        replayed=replayed,
        created_at=row.created_at,
    )


def _existing(session: Session, instance: str, workspace: str, key: str) -> AgentToolCall | None:
    return session.execute(
        select(AgentToolCall).where(
            AgentToolCall.instance == instance,  # type: ignore[arg-type]
            AgentToolCall.workspace == workspace,  # type: ignore[arg-type]
            AgentToolCall.idempotency_key == key,  # type: ignore[arg-type]
        )
    ).scalar_one_or_none()


def _evict(session: Session, instance: str, workspace: str, keep: int) -> None:
    """FIFO: keep the newest `keep` records of this instance and workspace."""
    calls = _CALLS.c
    scope = (calls.instance == instance, calls.workspace == workspace)
    newest = select(calls.id).where(*scope).order_by(calls.id.desc()).limit(keep)
    kept = [row for (row,) in session.execute(newest).all()]
    if len(kept) < keep:
        return
    session.execute(delete(_CALLS).where(*scope, calls.id < min(kept)))


def _tool_input(call: CallRequest) -> dict[str, Any]:
    """The tool's input. A research proposed in a turn's call belongs to that turn unless
    the input names one: the research route tells that turn of the human decision."""
    if call.tool_id == "research.prepare" and "turn_id" not in call.input:
        return {**call.input, "turn_id": call.turn_id}
    return call.input


def execute_call(
    store: Store,
    instance: str,
    workspace: str,
    call: CallRequest,
    *,
    max_results: int = DEFAULT_MAX_RESULTS,
) -> CallRecord:
    """Run `call` once per idempotency key; replays get the stored result. A concurrent
    call with the same key that commits first wins: this one runs again
    (`Store.run_transaction`), finds the winner's record and answers like a replay.

    Raises:
        ApplicationError: `idempotency_conflict` (409), the key names a call with another
            intent.
    """
    digest = intent_hash(call)

    def write(session: Session) -> CallRecord:
        existing = _existing(session, instance, workspace, call.idempotency_key)
        if existing is not None:
            if existing.intent_hash != digest:
                raise IdempotencyConflict(idempotency_key=call.idempotency_key).application_error()
            return _record(existing, replayed=True)
        outcome = run_tool(session, workspace, call.tool_id, _tool_input(call))
        row = AgentToolCall(
            instance=instance,
            workspace=workspace,
            turn_id=call.turn_id,
            call_id=call.call_id or str(uuid.uuid4()),
            result_id=str(uuid.uuid4()),
            tool_id=call.tool_id,
            idempotency_key=call.idempotency_key,
            intent_hash=digest,
            status=outcome.status,
            result=outcome.model_dump(mode="json"),
            created_at=datetime.now(UTC),
        )
        session.add(row)
        session.flush()
        _evict(session, instance, workspace, max_results)
        return _record(row, replayed=False)

    return store.run_transaction(write)


def get_result(store: Store, instance: str, workspace: str, result_id: str) -> CallRecord | None:
    """A stored result, only within its own instance and workspace."""
    with store.session() as session:
        row = session.execute(
            select(AgentToolCall).where(
                AgentToolCall.instance == instance,  # type: ignore[arg-type]
                AgentToolCall.workspace == workspace,  # type: ignore[arg-type]
                AgentToolCall.result_id == result_id,  # type: ignore[arg-type]
            )
        ).scalar_one_or_none()
        return None if row is None else _record(row, replayed=False)


def result_body(record: CallRecord) -> ToolResult:
    """What GET /results/{result_id} answers: the stored result."""
    outcome = record.outcome
    return ToolResult(
        result_id=record.result_id,
        call_id=record.call_id,
        turn_id=record.turn_id,
        tool_id=record.tool_id,
        status=cast(ToolStatus, record.status),  # the outcome's own, stored with it
        output=outcome.output,
        object_refs=outcome.object_refs,
        artifacts=outcome.artifacts,
        observations=outcome.observations,
        provenance_refs=outcome.provenance_refs,
        diagnostic=outcome.diagnostic,
        created_at=iso_ms(record.created_at),
    )


def call_result(record: CallRecord) -> CallResult:
    """What POST /calls answers: the result, and whether the idempotency key was seen."""
    return CallResult(**dict(result_body(record)), replayed=record.replayed)
