"""The Prompt Engineer's signal path (spec §3.1, §3.9; issue 21, item 5).

`raise_redactor_signal` is the spec's RaiseRedactorSignalAsync: it ensure-creates the
tenant's PromptRedactor bound to the call site the signal names (one per tenant and
site, id derived from both; created Paused, never bootstrapped: a bursty agent ticks
only once an operator starts it) and queues an `ExternalSignalReceived` event carrying
the `AgentSignalKind`, in one transaction. The event is delivered off: durably queued,
not ticked while the redactor is Paused. Of the kinds, only `HumanRequest` is wired
further (§3.1 "step 6 wires only HumanRequest"): it asks a human at once, as a
`decision` on the tenant's queue, whose answer reaches the redactor as
`OperatorAnsweredEscalation` when it runs.

An `ExternalSignalReceived` posted at `POST .../agents/{id}/events` must carry a valid
`payload.signalKind` too, and the SOA refuses the kind: §3.1 says it never receives it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlmodel import Session

from runtime.failures import WireError
from runtime.llm.contracts import SITE_PARENTS
from runtime.standing_agents import queue
from runtime.standing_agents.catalog import default_mode
from runtime.standing_agents.contracts import (
    AgentEvent,
    AgentSignalKind,
    AgentStatus,
    AgentType,
    AttentionKind,
    AttentionStatus,
    EventKind,
)
from runtime.standing_agents.models import AgentInstance, AttentionRequest
from runtime.store.engine import Store

SIGNAL_SOURCE = "prompt_engineer"
CALL_SITES: tuple[str, ...] = tuple(sorted(SITE_PARENTS))


def parse_signal_kind(payload: dict[str, Any]) -> AgentSignalKind | None:
    """The `AgentSignalKind` an ExternalSignalReceived payload carries; None when it is
    missing or not one of §3.1's kinds."""
    raw = payload.get("signalKind")
    if not isinstance(raw, str):
        return None
    try:
        return AgentSignalKind(raw)
    except ValueError:
        return None


def signal_kind(payload: dict[str, Any]) -> AgentSignalKind:
    """The `AgentSignalKind` an ExternalSignalReceived payload carries.

    Raises:
        ApplicationError: `SignalKindRefused` (400), missing or not one of §3.1's kinds.
    """
    kind = parse_signal_kind(payload)
    if kind is None:
        raise SignalKindRefused(given=payload.get("signalKind")).application_error()
    return kind


def redactor_instance_id(tenant: str, call_site: str) -> str:
    digest = hashlib.sha256(f"{tenant}\0{call_site}".encode()).hexdigest()[:20]
    return f"redactor-{digest}"


@dataclass(frozen=True)
class SignalRaised:
    instance: AgentInstance
    event: AgentEvent
    instance_created: bool
    duplicate: bool
    decision_id: str | None


def raise_redactor_signal(
    store: Store,
    tenant: str,
    call_site: str,
    kind: AgentSignalKind,
    payload: dict[str, Any],
    signal_id: str | None = None,
) -> SignalRaised:
    """Ensure the call site's PromptRedactor (Paused) and queue the signal, once per
    `signal_id` (a retry with the same id adds nothing).

    Raises:
        ApplicationError: `CallSiteRefused` (400), `call_site` is not one of the LLM site
            registry's.
    """
    if call_site not in SITE_PARENTS:
        raise CallSiteRefused(call_site=call_site).application_error()
    instance_id = redactor_instance_id(tenant, call_site)
    event_id = f"signal/{instance_id}/{signal_id or uuid.uuid4().hex}"
    body = {**payload, "signalKind": kind.value, "callSite": call_site}

    def write(db: Session) -> SignalRaised:
        created = _ensure_redactor(db, tenant, instance_id, call_site)
        row = db.get(AgentInstance, instance_id)
        assert row is not None
        event, fresh = queue.enqueue_in(
            db,
            tenant=tenant,
            instance_id=instance_id,
            kind=EventKind.EXTERNAL_SIGNAL_RECEIVED,
            payload=body,
            event_id=event_id,
            generation=row.generation,
        )
        decision_id = (
            _ask_a_human(db, row, event_id, body) if kind is AgentSignalKind.HUMAN_REQUEST else None
        )
        return SignalRaised(row, event, created, not fresh, decision_id)

    # A race for the redactor's row or a sequence number retries the whole write.
    return store.run_transaction(write)


def _ensure_redactor(db: Session, tenant: str, instance_id: str, call_site: str) -> bool:
    if db.get(AgentInstance, instance_id) is not None:
        return False
    now = datetime.now(UTC)
    db.add(
        AgentInstance(
            instance_id=instance_id,
            tenant=tenant,
            agent_type=AgentType.PROMPT_REDACTOR.value,
            status=AgentStatus.PAUSED.value,
            active_mode=default_mode(AgentType.PROMPT_REDACTOR),
            call_site=call_site,
            generation=0,
            created_at=now,
            updated_at=now,
        )
    )
    db.flush()
    return True


def _ask_a_human(db: Session, row: AgentInstance, event_id: str, body: dict[str, Any]) -> str:
    """HumanRequest: a decision on the tenant's queue now, whatever the redactor's status."""
    decision_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"human-request/{event_id}"))
    if db.get(AttentionRequest, decision_id) is None:
        question = str(body.get("question") or body.get("text") or "The Prompt Engineer asks.")
        db.add(
            AttentionRequest(
                decision_id=decision_id,
                tenant=row.tenant,
                kind=AttentionKind.DECISION.value,
                source=SIGNAL_SOURCE,
                soa_instance_id=row.instance_id,
                title=f"Prompt Engineer, {body['callSite']}: a human is asked"[:500],
                body=question,
                options=None,
                payload={"callSite": body["callSite"], "eventId": event_id},
                status=AttentionStatus.OPEN.value,
                op_id=f"human-request/{event_id}",
                created_at=datetime.now(UTC),
            )
        )
    return decision_id


# An event's or a signal's JSON payload is at most this many bytes.
MAX_PAYLOAD_BYTES = 64 * 1024


class PayloadTooLarge(WireError):
    """An event or signal payload over MAX_PAYLOAD_BYTES of JSON: 413."""

    kind: Literal["event_payload_too_large"] = "event_payload_too_large"
    what: str  # "event" | "signal"
    size: int

    @property
    def http_status(self) -> int:
        return 413

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"The {self.what} payload is {self.size} bytes of JSON; at most "
            f"{MAX_PAYLOAD_BYTES} are accepted",
            "code": "payload_too_large",
            "limit": MAX_PAYLOAD_BYTES,
            "size": self.size,
        }


def check_payload_size(payload: dict[str, Any], what: str) -> None:
    """Raises the PayloadTooLarge refusal (an ApplicationError) past the bound."""
    size = len(json.dumps(payload, separators=(",", ":")).encode("utf-8"))
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadTooLarge(what=what, size=size).application_error()


class CallSiteRefused(WireError):
    """A signal naming a call site the LLM site registry does not hold: 400."""

    kind: Literal["unknown_call_site"] = "unknown_call_site"
    call_site: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Unknown call site "{self.call_site}"',
            "code": "unknown_call_site",
            "allowed": list(CALL_SITES),
        }


class SignalKindRefused(WireError):
    """A signal whose `signalKind` is missing or not an `AgentSignalKind` (spec §3.1): 400."""

    kind: Literal["invalid_signal_kind"] = "invalid_signal_kind"
    given: Any = None

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"payload.signalKind {self.given!r} is not an AgentSignalKind",
            "code": "invalid_signal_kind",
            "allowed": [k.value for k in AgentSignalKind],
        }
