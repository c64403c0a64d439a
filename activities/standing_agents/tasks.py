"""`soa_propose_task`'s and `soa_assign_coder`'s effects: the task row once per operation
id, then the task's workflow (its id derived from the task, so a retried activity attaches
to what its first attempt started), which, for agentrt's own coder, puts the task's
prompt on it (activities/coding_tasks/coder_session.py)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from temporalio import activity
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import ApplicationError

from runtime.coding_tasks import store as coding_tasks
from runtime.coding_tasks.contracts import (
    OWN_CODER,
    SPAWN_SIGNAL,
    CodingTaskInput,
    task_search_attributes,
    task_workflow_id,
)
from runtime.coding_tasks.contracts import WAKE_SIGNAL as TASK_WAKE
from runtime.coding_tasks.contracts import WORKFLOW_NAME as TASK_WORKFLOW
from runtime.failures import decode_failure
from runtime.settings import Settings
from runtime.standing_agents import task_proposals, tool_context
from runtime.store import Store

TASK_PROMPT_MAX = 20_000


async def propose_task(
    store: Store, settings: Settings, context: tool_context.ToolContext, arguments: dict[str, Any]
) -> dict[str, Any]:
    """The boundary checks, the task row (once per op id), then (agentrt's coder) its
    session prompt, or (`coder: any`) its workflow, the task left open."""
    prompt = arguments.get("prompt")
    if isinstance(prompt, str) and len(prompt) > TASK_PROMPT_MAX:
        raise tool_context.BoundaryError(f"the prompt exceeds {TASK_PROMPT_MAX} characters")
    task_proposals.require_soa(context)
    task = await asyncio.to_thread(task_proposals.stored_task, store, context.op_id)
    if task is None:
        # Every boundary before the row: a blocked call leaves no open task behind.
        # The session cap is checked where the session row is written, atomically.
        task = await asyncio.to_thread(
            functools.partial(
                task_proposals.propose_task,
                context,
                arguments,
                workspace_cwd=settings.workspace_cwd,
                max_sessions=settings.max_sessions,
            )
        )
    if task.holder is None:
        # Open, for a registered coder: its workflow keeps its timers.
        await start_task_workflow(settings, task.tenant, task.task_id, task.state)
        return {"taskId": task.task_id, "state": task.state}
    if task.session_id is None:
        # agentrt's coder's: its workflow starts it (a slot of the tenant, the task's own
        # directory, its approval mode and preset) and settles the task when it ends.
        await start_task_workflow(
            settings, task.tenant, task.task_id, task.state, signal=SPAWN_SIGNAL
        )
        return {"taskId": task.task_id, "state": task.state, "holder": task.holder}
    session_id = task.session_id
    return {"taskId": task.task_id, "sessionId": session_id}


async def assign_coder(
    store: Store, settings: Settings, context: tool_context.ToolContext, arguments: dict[str, Any]
) -> dict[str, Any]:
    """soa_assign_coder: an open task of the tenant, claimed for agentrt's coder (a retry
    finds it claimed so: the same answer), and its workflow told to start the coder."""
    task_proposals.require_soa(context)
    task_id = str(arguments.get("taskId") or "")
    try:
        row = await asyncio.to_thread(
            lambda: coding_tasks.claim(
                store,
                context.tenant,
                task_id,
                OWN_CODER,
                context.now,
                assigned_by=f"agent:{context.instance_id}",
            )
        )
    except ApplicationError as err:
        failure = decode_failure(err)
        message = failure.response_body().get("error") if failure is not None else None
        raise tool_context.ToolInputError(str(message or err)) from None
    await start_task_workflow(settings, row.tenant, row.task_id, row.state, signal=SPAWN_SIGNAL)
    return {"taskId": row.task_id, "state": row.state, "holder": row.holder}


async def start_task_workflow(
    settings: Settings, tenant: str, task_id: str, state: str, *, signal: str = TASK_WAKE
) -> None:
    """Signal-with-start `wake` (or `signal`) of a coding task's workflow, from an activity."""
    await activity.client().start_workflow(
        TASK_WORKFLOW,
        CodingTaskInput(
            tenant=tenant, task_id=task_id, claim_timeout_ms=settings.coding_task_claim_timeout_ms
        ),
        id=task_workflow_id(tenant, task_id),
        task_queue=settings.task_queue,
        start_signal=signal,
        search_attributes=TypedSearchAttributes(task_search_attributes(tenant, state)),
    )
