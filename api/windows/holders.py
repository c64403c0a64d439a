"""Which holders a direct client may lease for (`POST .../windows/{holder}/{verb}`).

A holder named after something of agentrt's (`session-{id}`, `turn-{id}`, `agent-{id}`,
runtime/windows/lease_contracts.py) has its lease settled when that thing ends, under that
thing's own tenant. So the door takes it only under that tenant and only while the thing
lives: otherwise the lease would outlive its holder until the idle expiry (a session
closed, a turn finished, an agent stopped) or never be reached by the settlement (another
tenant). Both refusals are `VALIDATION_ERROR`s (reason `unknown_holder` /
`holder_settled`) before any lease. Any other name is the client's own.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Final

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from api.temporal import query_workflow
from runtime.agent_tools.contracts import TURN_STATE_QUERY, TurnState, TurnStatus
from runtime.agent_tools.models import AgentTurn
from runtime.coding_tasks.contracts import SETTLED, TaskState
from runtime.coding_tasks.models import CodingTask
from runtime.sessions.registry import get_session
from runtime.settings import Settings
from runtime.standing_agents import control
from runtime.standing_agents.contracts import AgentStatus
from runtime.store import Store
from runtime.windows.errors import WindowsError
from runtime.windows.lease_contracts import (
    SESSION_TENANT,
    holder_settled,
    known_holder,
    unknown_holder,
)

# The describe of a turn's workflow (Temporal answers it) and the query of its state.
DESCRIBE_TIMEOUT = 10.0
# The statuses of a turn that has decided its end (runtime/agent_tools/contracts.py).
TURN_ENDED: Final[frozenset[TurnStatus]] = frozenset({"completed", "denied", "failed"})


async def refuse_holder(
    store: Store, client: Client, settings: Settings, tenant: str, holder: str
) -> WindowsError | None:
    """The refusal of a verb for `holder` under `tenant`, or None when it may lease.

    Raises:
        RPCError, TimeoutError: Temporal did not answer the describe of a turn.
    """
    known = known_holder(holder)
    if known is None:
        return None
    kind, ident = known
    if kind == "session":
        if tenant != SESSION_TENANT:
            return unknown_holder(
                holder, tenant, f"a session's lease is tenant {SESSION_TENANT!r}'s"
            )
        session = await asyncio.to_thread(get_session, store, ident)
        if session is None:
            return unknown_holder(holder, tenant, "no such session")
        return None if session.live else holder_settled(holder, "session_closed")
    if kind == "turn":
        turn = await asyncio.to_thread(_load_turn, store, settings.instance, tenant, ident)
        if turn is None:
            return unknown_holder(holder, tenant, "no such turn in this workspace")
        if await turn_ended(client, turn.workflow_id):
            return holder_settled(holder, "turn_finished")
        return None
    if kind == "task":
        task = await asyncio.to_thread(_load_task, store, tenant, ident)
        if task is None:
            return unknown_holder(holder, tenant, "no such coding task in this tenant")
        if TaskState(task.state) in SETTLED:
            return holder_settled(holder, f"task {task.state}")
        return None
    agent = await asyncio.to_thread(control.find_instance, store, tenant, ident)
    if agent is None:
        return unknown_holder(holder, tenant, "no such agent in this tenant")
    if agent.status != AgentStatus.ACTIVE.value:
        return holder_settled(holder, f"agent {agent.status.lower()}")
    return None


def _load_turn(store: Store, instance: str, workspace: str, turn_id: str) -> AgentTurn | None:
    with store.session() as db:
        row: AgentTurn | None = db.get(AgentTurn, (instance, workspace, turn_id))
        return row


def _load_task(store: Store, tenant: str, task_id: str) -> CodingTask | None:
    with store.session() as db:
        row = db.get(CodingTask, task_id)
    return row if row is not None and row.tenant == tenant else None


async def turn_ended(client: Client, workflow_id: str) -> bool:
    """Whether the turn whose workflow is `workflow_id` has ended, for its lease.

    Its workflow has closed, or never started; or it still runs but has decided its end
    (a terminal `status`: completed, denied, failed). A turn settles its lease after its
    end is decided and before its workflow closes: a verb taken in between would lease a
    machine that no settlement releases any more.

    Raises:
        RPCError, TimeoutError: Temporal did not answer the describe.
        ApiError: no worker answered the state query (503 `worker_unavailable`).
    """
    handle = client.get_workflow_handle(workflow_id)
    try:
        described = await handle.describe(rpc_timeout=timedelta(seconds=DESCRIBE_TIMEOUT))
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return True  # never started (its POST failed): nothing to settle a lease
        if err.status == RPCStatusCode.DEADLINE_EXCEEDED:
            raise TimeoutError("Temporal did not answer the describe of a turn") from err
        raise
    if described.status != WorkflowExecutionStatus.RUNNING:
        return True
    state = await query_workflow(
        lambda timeout: handle.query(TURN_STATE_QUERY, result_type=TurnState, rpc_timeout=timeout),
        DESCRIBE_TIMEOUT,
    )
    return state.status in TURN_ENDED
