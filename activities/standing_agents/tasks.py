"""`soa_propose_task`'s effect: the task row once per operation id, then the task's
prompt on an agentrt session in the tenant's workspace (ids derived from the task, so a
retried activity attaches to what its first attempt started)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from runtime.coding_tasks import store as coding_tasks
from runtime.coding_tasks.contracts import (
    OWN_CODER,
    SPAWN_SIGNAL,
    CodingTaskInput,
    task_prompt_id,
    task_workflow_id,
)
from runtime.coding_tasks.contracts import WAKE_SIGNAL as TASK_WAKE
from runtime.coding_tasks.contracts import WORKFLOW_NAME as TASK_WORKFLOW
from runtime.failures import decode_failure
from runtime.llm.active import active_model
from runtime.llm.config_store import session_binding
from runtime.llm.routing import SESSION_SITE
from runtime.search_attributes import KIND, STATUS, TENANT
from runtime.sessions.contracts import CodingTaskRef, PromptItem, SessionInput, SubmitPrompt
from runtime.sessions.prompts import preview, save_prompt
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
        await start_task_workflow(settings, task.tenant, task.task_id)
        return {"taskId": task.task_id, "state": task.state}
    if task.session_id is None:
        # agentrt's coder's: its workflow starts it (a slot of the tenant, the task's own
        # directory, its approval mode and preset) and settles the task when it ends.
        await start_task_workflow(settings, task.tenant, task.task_id, signal=SPAWN_SIGNAL)
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
    await start_task_workflow(settings, row.tenant, row.task_id, signal=SPAWN_SIGNAL)
    return {"taskId": row.task_id, "state": row.state, "holder": row.holder}


async def start_task_workflow(
    settings: Settings, tenant: str, task_id: str, *, signal: str = TASK_WAKE
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
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(KIND, "coding_task"),
                SearchAttributePair(TENANT, tenant),
                SearchAttributePair(STATUS, "running"),
            ]
        ),
    )


async def submit_task_prompt(
    store: Store,
    settings: Settings,
    task_id: str,
    text: str,
    *,
    workspace: str | None = None,
    approval_mode: str | None = None,
    coding_task: CodingTaskRef | None = None,
    preset_id: str | None = None,
    model: str | None = None,
) -> str:
    """agentrt's coder: a session in `workspace` (the tenant's, by default), and the
    task's prompt on it; with `coding_task`, the prompt's end settles that task.

    The session id and prompt id derive from the task id, so a retry attaches to
    the session the first attempt started and the update id dedupes the prompt.
    """
    session_id = task_proposals.task_session_id(task_id)
    prompt_id = task_prompt_id(task_id)
    workspace = workspace or settings.workspace_cwd
    model_id, binding = active_model(settings).model_id, None
    if model is not None and preset_id is None:
        # The task's model is the session's own model, on what Session:Default resolves
        # to now (as POST /session/{id}/model records it; its preset and provider).
        binding, _ = await asyncio.to_thread(session_binding, store, settings, SESSION_SITE)
        model_id = model
    await asyncio.to_thread(
        task_proposals.ensure_task_session, store, session_id, workspace, task_id
    )
    request = SessionInput(
        session_id=session_id,
        workspace_cwd=workspace,
        policy=settings.permission_policy,
        permission_timeout_ms=settings.permission_response_timeout_ms,
        max_pending_prompts=settings.max_pending_prompts_per_session,
        event_retention=settings.event_ring_size,
        shell_enabled=settings.session_shell,
        model_id=model_id,
        model_binding=binding,
        model_provider=settings.model_provider,
        approval_mode=approval_mode or "default",
        preset_id=preset_id,
    )
    client = activity.client()
    await asyncio.to_thread(save_prompt, store, session_id, prompt_id, text)
    handle: WorkflowHandle[Any, Any]
    try:
        handle = await client.start_workflow(
            "SessionWorkflow",
            request,
            id=f"session/{session_id}",
            task_queue=settings.task_queue,
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(KIND, "session"),
                    SearchAttributePair(TENANT, workspace),
                    SearchAttributePair(STATUS, "idle"),
                ]
            ),
            memo={"workspaceCwd": workspace, "scope": "thread", "agentTask": task_id},
            # A retry never starts the session again once it ended (terminated, closed):
            # the task's coder is gone, and its task settles so (CoderSessionEnded).
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
    except WorkflowAlreadyStartedError:  # a retry: attach to the first attempt's
        handle = client.get_workflow_handle(f"session/{session_id}")
        await _still_running(handle, session_id)
    item = PromptItem(
        prompt_id=prompt_id, preview=preview(text), originator="agent", coding_task=coding_task
    )
    try:
        await handle.execute_update(
            "submit_prompt",
            SubmitPrompt(item=item, model_provider=settings.model_provider),
            id=prompt_id,
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:  # the session ended under the update
            await _still_running(handle, session_id)
        raise
    return session_id


class CoderSessionEnded(Exception):
    """agentrt's coder's session ended (terminated, failed, closed) before its task's
    prompt was submitted: it is not started again."""


async def _still_running(handle: WorkflowHandle[Any, Any], session_id: str) -> None:
    description = await handle.describe()
    if description.status != WorkflowExecutionStatus.RUNNING:
        raise CoderSessionEnded(session_id)
