"""A coding task's prompt on agentrt's coder: a session in the task's workspace, started
once (its ids derive from the task, so a retried activity attaches to what its first
attempt started), and the task's prompt submitted to it once."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.common import TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from runtime.coding_tasks.coder_session import ensure_task_session
from runtime.coding_tasks.contracts import task_prompt_id, task_session_id
from runtime.llm.active import active_model
from runtime.llm.config_store import session_binding
from runtime.llm.contracts import SESSION_SITE
from runtime.sessions.contracts import (
    CodingTaskRef,
    PromptItem,
    SessionInput,
    SubmitPrompt,
    session_search_attributes,
    session_workflow_id,
)
from runtime.sessions.prompts import preview, save_prompt
from runtime.settings import Settings
from runtime.store import Store


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
    session_id = task_session_id(task_id)
    prompt_id = task_prompt_id(task_id)
    workspace = workspace or settings.workspace_cwd
    model_id, binding = active_model(settings).model_id, None
    if model is not None and preset_id is None:
        # The task's model is the session's own model, on what Session:Default resolves
        # to now (as POST /session/{id}/model records it; its preset and provider).
        binding, _ = await asyncio.to_thread(session_binding, store, settings, SESSION_SITE)
        model_id = model
    await asyncio.to_thread(ensure_task_session, store, session_id, workspace, task_id)
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
            id=session_workflow_id(session_id),
            task_queue=settings.task_queue,
            search_attributes=TypedSearchAttributes(session_search_attributes(request)),
            memo={"workspaceCwd": workspace, "scope": "thread", "agentTask": task_id},
            # A retry never starts the session again once it ended (terminated, closed):
            # the task's coder is gone, and its task settles so (CoderSessionEnded).
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
    except WorkflowAlreadyStartedError:  # a retry: attach to the first attempt's
        handle = client.get_workflow_handle(session_workflow_id(session_id))
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
