"""Standing agents: /api/v1/tenants/{tenant}/agents/* (issue 10's routes).

router → the store (runtime/standing_agents/control.py) → `wake` to
`StandingAgentWorkflow` (api/standing_agents/temporal_calls.py). Each mutation answers once its
store write committed; the wake-up that follows may fail (Temporal down) without
losing anything: the event waits in the queue for the sweeper.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from starlette.responses import StreamingResponse

from api.deps import ConnectorDep, JournalDep, SettingsDep, StoreDep, TemporalDep, TenantPath
from api.errors import ApiError, temporal_unavailable
from api.input_bounds import MAX_SEQUENCE, StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents.deps import EnabledTenant, InstancePath
from api.standing_agents.models import (
    AgentCreate,
    AgentList,
    AgentView,
    BudgetPauseView,
    EventAccepted,
    EventBody,
    Ledger,
    LlmCalls,
    MessageAccepted,
    MessageBody,
    MessageList,
    ModeBody,
    ModeChanges,
    ModeSet,
)
from api.standing_agents.temporal_calls import WakerDep, wake
from api.windows.temporal_calls import settle_windows_lease
from runtime.standing_agents import control, messages, reads, signals
from runtime.standing_agents.contracts import (
    EXTERNAL_EVENT_KINDS,
    AgentStatus,
    AgentType,
    EventKind,
    ModeChangeSource,
    agent_workflow_id,
)
from runtime.standing_agents.errors import InvalidEventKind
from runtime.standing_agents.models import AgentInstance
from runtime.standing_agents.modes import (
    ModeChange,
    apply_mode_change,
    mode_change_view,
    mode_changes,
)
from runtime.windows.lease_contracts import agent_holder

router = APIRouter(prefix="/api/v1/tenants/{tenant}/agents", route_class=StrictJsonRoute)
MUTATION = [Depends(require_configured_token)]
# An event's payload is stored in the queue and read into the agent's prompt: 64 KB of JSON.
MAX_EVENT_PAYLOAD_BYTES = signals.MAX_PAYLOAD_BYTES


def agent_view(row: AgentInstance) -> AgentView:
    now = datetime.now(UTC)
    return AgentView(
        instance_id=row.instance_id,
        tenant=row.tenant,
        agent_type=row.agent_type,
        status=row.status,
        active_mode=row.active_mode,
        foundational=control.is_foundational(row, now),
        workset_deadline=control.iso(row.workset_deadline_utc),
        consecutive_idle_ticks=row.consecutive_idle_ticks,
        consecutive_blocked_turns=row.consecutive_blocked_turns,
        next_tick_at=control.iso(row.next_tick_at),
        last_tick_at=control.iso(row.last_tick_at),
        tick_in_progress=row.tick_in_progress,
        generation=row.generation,
        workflow_id=agent_workflow_id(row.tenant, row.instance_id),
        created_at=control.iso(row.created_at) or "",
        call_site=row.call_site,
        # The stored pause is camelCase already (runtime/standing_agents/budget_pause.py):
        # validated by its wire names.
        budget_pause=BudgetPauseView.model_validate(row.budget_pause) if row.budget_pause else None,
    )


# -- instances --------------------------------------------------------------------------------


@router.get("", responses=errors(400, 403))
async def list_agents(tenant: EnabledTenant, store: StoreDep) -> AgentList:
    rows = await asyncio.to_thread(control.list_instances, store, tenant)
    return AgentList(agents=[agent_view(row) for row in rows])


@router.post("", status_code=201, dependencies=MUTATION, responses=errors(400, 401, 403, 409, 503))
async def create_agent(
    body: AgentCreate,
    tenant: EnabledTenant,
    store: StoreDep,
    settings: SettingsDep,
    client: TemporalDep,
) -> AgentView:
    """Create an agent, Paused (start it with .../start); one SOA per tenant."""
    row = await asyncio.to_thread(
        functools.partial(
            control.create_instance,
            foundational_window_ms=settings.agent_foundational_window_ms,
        ),
        store,
        tenant,
        body.agent_type,
        AgentStatus.PAUSED,
    )
    try:
        await wake(client, settings, row)
    except Exception as err:
        # Nothing refers to the new row yet: undo it, so the client's retry starts clean.
        await asyncio.to_thread(control.delete_instance, store, row.instance_id)
        raise temporal_unavailable(
            "Temporal did not start the agent's workflow; POST again"
        ) from err
    return agent_view(row)


@router.get("/{instance_id}", responses=errors(400, 403, 404))
async def get_agent(tenant: EnabledTenant, instance_id: InstancePath, store: StoreDep) -> AgentView:
    return agent_view(await asyncio.to_thread(control.get_instance, store, tenant, instance_id))


async def _transition(
    fn: Callable[..., control.Transition],
    tenant: str,
    instance_id: str,
    store: StoreDep,
    journal: JournalDep,
    waker: WakerDep,
) -> AgentView:
    transition = await asyncio.to_thread(fn, store, journal, tenant, instance_id)
    if transition.changed:
        await waker(transition.instance)
    return agent_view(transition.instance)


@router.post("/{instance_id}/start", dependencies=MUTATION, responses=errors(400, 401, 403, 404))
async def start_agent(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    journal: JournalDep,
    waker: WakerDep,
) -> AgentView:
    """Paused or Closed → Active, seeded with AgentInitialized; Active: unchanged."""
    return await _transition(control.start, tenant, instance_id, store, journal, waker)


@router.post("/{instance_id}/stop", dependencies=MUTATION, responses=errors(400, 401, 404))
async def stop_agent(
    tenant: TenantPath,
    instance_id: InstancePath,
    store: StoreDep,
    journal: JournalDep,
    waker: WakerDep,
    connector: ConnectorDep,
) -> AgentView:
    """Active → Paused (events keep queueing; nothing is planned until start); the
    agent's Windows lease (holder `agent-{instanceId}`), if any, is released.

    Reachable while the tenant's feature is off (every other agent route answers 403
    there): an operator can always stop an agent."""
    view = await _transition(control.stop, tenant, instance_id, store, journal, waker)
    await settle_windows_lease(connector, tenant, agent_holder(instance_id), "agent_stopped")
    return view


@router.post(
    "/{instance_id}/reset", dependencies=MUTATION, responses=errors(400, 401, 403, 404, 409)
)
async def reset_agent(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    journal: JournalDep,
    waker: WakerDep,
    settings: SettingsDep,
) -> AgentView:
    """A new generation: memory (ledger) and counters start over, pending events are
    drained, AgentInitialized reseeded. 409 `tick_in_progress` while a tick runs."""
    row = await asyncio.to_thread(
        functools.partial(
            control.reset, foundational_window_ms=settings.agent_foundational_window_ms
        ),
        store,
        journal,
        tenant,
        instance_id,
    )
    await waker(row)
    return agent_view(row)


# -- messages and events ----------------------------------------------------------------------


@router.post(
    "/{instance_id}/messages",
    status_code=202,
    dependencies=MUTATION,
    responses=errors(400, 401, 403, 404),
)
async def post_message(
    body: MessageBody,
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    journal: JournalDep,
    waker: WakerDep,
) -> MessageAccepted:
    """Persist the operator's message and queue it as OperatorMessage (202: durably queued)."""
    row, created = await asyncio.to_thread(
        messages.post_message, store, journal, tenant, instance_id, body.text, body.message_id
    )
    instance = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    await waker(instance)
    return MessageAccepted(message_id=messages.client_message_id(row), duplicate=not created)


@router.get("/{instance_id}/messages", responses=errors(400, 403, 404))
async def get_messages(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
) -> MessageList:
    """The transcript, both directions, oldest first (the last `limit` messages)."""
    rows = await asyncio.to_thread(messages.list_messages, store, tenant, instance_id, limit)
    return MessageList(messages=[messages.message_view(row) for row in rows])


@router.post(
    "/{instance_id}/events",
    status_code=202,
    dependencies=MUTATION,
    responses=errors(400, 401, 403, 404, 413),
)
async def post_event(
    body: EventBody,
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    waker: WakerDep,
) -> EventAccepted:
    """An orchestration or external event; the other kinds have their own routes."""
    postable = {kind.value: kind for kind in EXTERNAL_EVENT_KINDS}
    kind = postable.get(body.kind)
    if kind is None:
        raise ApiError.of(InvalidEventKind(event_kind=body.kind, allowed=sorted(postable)))
    signals.check_payload_size(body.payload, "event")
    if kind is EventKind.EXTERNAL_SIGNAL_RECEIVED:
        signals.signal_kind(body.payload)
        target = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
        if target.agent_type == AgentType.SOA.value:
            # §3.1: the SOA never receives a signal (the Prompt Engineer's path).
            allowed = sorted(k for k in postable if k != kind.value)
            raise ApiError.of(InvalidEventKind(event_kind=kind.value, allowed=allowed, to_soa=True))
    event, created = await asyncio.to_thread(
        messages.enqueue_external, store, tenant, instance_id, kind, body.payload, body.event_id
    )
    instance = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    await waker(instance)
    return EventAccepted(
        event_id=event.event_id,
        kind=event.kind.value,
        sequence_number=event.sequence_number,
        duplicate=not created,
    )


# -- modes -------------------------------------------------------------------------------------


@router.post("/{instance_id}/mode", dependencies=MUTATION, responses=errors(400, 401, 403, 404))
async def set_mode(
    body: ModeBody,
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    journal: JournalDep,
    waker: WakerDep,
) -> ModeSet:
    """An operator sets the mode (`source=ui`); it applies from the next tick."""
    await asyncio.to_thread(control.get_instance, store, tenant, instance_id)

    def apply() -> ModeChange:
        return apply_mode_change(
            store, instance_id, body.mode, ModeChangeSource.UI, body.actor, journal=journal
        )

    change = await asyncio.to_thread(apply)
    instance = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    # The workflow updates its AgentrtMode search attribute when it next reads the row.
    await waker(instance)
    return ModeSet(
        instance_id=instance_id, active_mode=change.to_mode, change=mode_change_view(change)
    )


@router.get("/{instance_id}/mode-changes", responses=errors(400, 403, 404))
async def get_mode_changes(
    tenant: EnabledTenant, instance_id: InstancePath, store: StoreDep
) -> ModeChanges:
    await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    changes = await asyncio.to_thread(mode_changes, store, instance_id)
    return ModeChanges(changes=[mode_change_view(change) for change in changes])


# -- the record: ledger and model calls ----------------------------------------------------------


@router.get("/{instance_id}/ledger", responses=errors(400, 403, 404))
async def get_ledger(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    after: Annotated[int, Query(ge=-1, le=MAX_SEQUENCE)] = -1,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Ledger:
    """Turns of the current generation with `seq > after`, oldest first."""
    instance = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    turns = await asyncio.to_thread(reads.ledger_page, store, instance, after, limit)
    return Ledger(turns=[reads.turn_view(turn) for turn in turns])


class NdjsonStream(Response):
    """`response_class=` for documentation: the route answers NDJSON."""

    media_type = "application/x-ndjson"


@router.get(
    "/{instance_id}/ledger/export",
    response_class=NdjsonStream,
    response_model=None,
    responses=errors(400, 403, 404),
)
async def export_ledger(
    tenant: EnabledTenant, instance_id: InstancePath, store: StoreDep
) -> Response:
    """The current chain as NDJSON, one turn a line: `agentrt ledger verify FILE` checks it."""
    instance = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)

    async def lines() -> AsyncIterator[bytes]:
        after = -1
        while True:
            page = await asyncio.to_thread(
                reads.ledger_page, store, instance, after, reads.EXPORT_PAGE
            )
            for turn in page:
                line = json.dumps(
                    reads.turn_view(turn).model_dump(mode="json"), separators=(",", ":")
                )
                yield (line + "\n").encode()
            if len(page) < reads.EXPORT_PAGE:
                return
            after = page[-1].seq

    filename = f"ledger-{instance_id}-g{instance.generation}.ndjson"
    return StreamingResponse(
        lines(),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/{instance_id}/llm-calls", responses=errors(400, 403, 404))
async def get_llm_calls(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> LlmCalls:
    """One row per attempt of the agent's model calls, failed ones included."""
    await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    rows = await asyncio.to_thread(reads.llm_attempts, store, tenant, instance_id, limit)
    return LlmCalls(calls=[reads.attempt_view(row) for row in rows])
