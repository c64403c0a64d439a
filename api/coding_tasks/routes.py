"""A tenant's coding tasks: /api/v1/tenants/{tenant}/coding-tasks.

An operator creates one (strict), lists them, reads one, cancels one; coders claim,
progress and complete them through agentrt's MCP tools, and a SOA proposes them with
`soa_propose_task` (runtime/coding_tasks). Every write is a compare-and-swap in the store,
then a wake-up of the task's workflow `coding-task/{tenant}/{taskId}` (its timers: the
deadline, a silent holder's claim), and after a settlement of the proposing agent, whose
`DependencyCompleted` the settling write enqueued. A tenant whose standing-agents
feature is off answers 403 `feature_disabled`.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from api.coding_tasks.models import TaskCreate, TaskList
from api.coding_tasks.temporal_calls import after_write, start_timers
from api.deps import ConnectorDep, SettingsDep, StoreDep
from api.errors import temporal_unavailable
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.security.roles import IdentityDep
from api.standing_agents.deps import EnabledTenant
from api.standing_agents.temporal_calls import WakerDep
from runtime.coding_tasks import own_coder
from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import OWN_CODER, SPAWN_SIGNAL, TaskState, TaskView
from runtime.tenants.tokens import Identity

router = APIRouter(
    prefix="/api/v1/tenants/{tenant}/coding-tasks", route_class=StrictJsonRoute, tags=["agents"]
)
MUTATION = [Depends(require_configured_token)]
TaskPath = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


def who(identity: Identity | None) -> str:
    """The verified identity a write records (the deployment's operator when no token)."""
    return identity.label if identity is not None else "operator"


@router.post("", status_code=201, dependencies=MUTATION, responses=errors(400, 401, 403, 503))
async def create_task(
    body: TaskCreate,
    tenant: EnabledTenant,
    store: StoreDep,
    settings: SettingsDep,
    connector: ConnectorDep,
    identity: IdentityDep,
) -> TaskView:
    """An open task (its `presetId` wins over a model/provider, resolved when it runs).
    The same `requestId` again answers the same task; a 503 leaves a task whose timers
    start with the next POST of the same `requestId`."""
    request_id = body.request_id or uuid.uuid4().hex
    row = await asyncio.to_thread(
        lambda: tasks.create(
            store,
            tenant=tenant,
            title=body.title,
            instructions=body.instructions,
            proposed_by=who(identity),
            now=datetime.now(UTC),
            op_id=f"rest/{tenant}/{request_id}",
            capabilities=body.capabilities,
            workspace=settings.workspace_cwd,
            preset_id=body.preset_id,
            model=body.model,
            provider=body.provider,
            approval_mode=body.approval_mode,
            deadline=body.deadline,
        )
    )
    try:
        await start_timers(await connector.get(), settings, row)
    except Exception as err:
        raise temporal_unavailable(
            "the task is stored; Temporal did not start its timers: POST it again with the "
            "same requestId"
        ) from err
    return tasks.view(row)


@router.get("", responses=errors(400, 403))
async def list_tasks(
    tenant: EnabledTenant,
    store: StoreDep,
    state: Annotated[list[TaskState] | None, Query()] = None,
) -> TaskList:
    rows = await asyncio.to_thread(tasks.list_tasks, store, tenant, state or [])
    return TaskList(tenant=tenant, tasks=[tasks.view(r) for r in rows])


@router.get("/{task_id}", responses=errors(400, 403, 404))
async def get_task(tenant: EnabledTenant, store: StoreDep, task_id: str = TaskPath) -> TaskView:
    return tasks.view(await asyncio.to_thread(tasks.get, store, tenant, task_id))


@router.post("/{task_id}/cancel", dependencies=MUTATION, responses=errors(400, 401, 403, 404, 409))
async def cancel_task(
    tenant: EnabledTenant,
    store: StoreDep,
    settings: SettingsDep,
    connector: ConnectorDep,
    identity: IdentityDep,
    waker: WakerDep,
    task_id: str = TaskPath,
) -> TaskView:
    """Cancel a task that is not settled (again: the same answer); its Windows lease is
    released and the proposing agent told."""
    row = await asyncio.to_thread(
        tasks.cancel, store, tenant, task_id, who(identity), datetime.now(UTC)
    )
    await after_write(connector, settings, store, row, waker)
    return tasks.view(row)


@router.post(
    "/{task_id}/coder", dependencies=MUTATION, responses=errors(400, 401, 403, 404, 409, 503)
)
async def spawn_coder(
    tenant: EnabledTenant,
    store: StoreDep,
    settings: SettingsDep,
    connector: ConnectorDep,
    identity: IdentityDep,
    task_id: str = TaskPath,
) -> TaskView:
    """Give an open task to agentrt's own coder: it is claimed for `agentrt-coder` (409
    `task_not_open` otherwise), with a note naming who assigned it, and the task's workflow
    starts an agentrt session in the task's own directory with its instructions and
    approval mode, when the tenant has a free coder slot (AGENTRT_CODERS_PER_TENANT). The
    prompt's end settles the task."""
    row = await asyncio.to_thread(
        lambda: tasks.claim(
            store, tenant, task_id, OWN_CODER, datetime.now(UTC), assigned_by=who(identity)
        )
    )
    try:
        await start_timers(await connector.get(), settings, row, SPAWN_SIGNAL)
    except Exception as err:
        # Nothing left behind: the task is open again (unless its coder started after all).
        await asyncio.to_thread(
            own_coder.unclaim_unstarted, store, tenant, task_id, datetime.now(UTC)
        )
        raise temporal_unavailable(
            "Temporal did not start agentrt's coder; the task is open again: POST again"
        ) from err
    return tasks.view(row)
