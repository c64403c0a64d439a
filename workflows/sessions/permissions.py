"""The permission sub-machine of SessionWorkflow: requests raised by tool calls, answered
by votes (the mediation policy), a cancel of the prompt, or a durable timer.

Workflow code (deterministic): it reads no clock and does no I/O; it emits through the
session's `emit` (journal local activities) and `set_status` (a search attribute), in
the same order as when it was part of `workflows/sessions/session.py`, so running sessions
replay unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy

from workflows import patches
from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.llm.contracts import ToolCall
    from runtime.sessions.contracts import (
        PermissionView,
        PromptItem,
        SessionActivityContracts,
        SessionInput,
        TaskDecisionInput,
        ToolPreview,
        VoteRequest,
        VoteResult,
    )
    from runtime.sessions.permission_options import (
        default_options,
    )
    from runtime.sessions.permissions import (
        NotPending,
        PartialVote,
        PendingPermission,
        Resolved,
        Vote,
        mediate,
    )


class Emit(Protocol):
    """SessionWorkflow's journal append (one event, deduplicated by position)."""

    async def __call__(
        self,
        event_type: str,
        data: dict[str, Any],
        *,
        prompt_id: str | None = None,
        originator: str | None = None,
    ) -> None: ...


class Pending:
    """A permission request waiting for votes, a cancel, or its timer."""

    def __init__(self, state: PendingPermission) -> None:
        self.state = state
        self.outcome: dict[str, Any] | None = None


class SessionPermissions:
    """The session's open permission requests and how each one ends."""

    def __init__(self, emit: Emit, set_status: Callable[[str], Awaitable[None]]) -> None:
        self._emit = emit
        self._set_status = set_status
        self._pending: dict[str, Pending] = {}

    def views(self) -> list[PermissionView]:
        """The unanswered requests, for the `status` query."""
        return [
            PermissionView(
                request_id=p.state.request_id,
                prompt_id=p.state.prompt_id,
                options=[o.optionId for o in p.state.options],
            )
            for p in self._pending.values()
            if p.outcome is None
        ]

    # -- votes (the `vote` update) -------------------------------------------------------

    def validate_vote(self, request: VoteRequest) -> None:
        """Refuse, before it enters history, a vote the policy would not count."""
        pending = self._pending.get(request.request_id)
        if pending is None or pending.outcome is not None:
            raise NotPending(request_id=request.request_id).application_error()
        result = mediate(_with_voters(pending.state, request), _vote(request))
        if not isinstance(result, Resolved | PartialVote):
            raise result.application_error()

    async def vote(self, request: VoteRequest) -> VoteResult:
        pending = self._pending[request.request_id]
        pending.state = _with_voters(pending.state, request)
        result = mediate(pending.state, _vote(request))
        if isinstance(result, Resolved):
            await self.resolve(pending, result.acp_outcome(), originator=result.by_client_id)
            return VoteResult(kind="resolved")
        assert isinstance(result, PartialVote)
        pending.state = result.updated
        await self._emit(
            "permission_partial_vote",
            result.event.data,
            prompt_id=pending.state.prompt_id,
            originator=request.client_id,
        )
        return VoteResult(kind="partial")

    # -- asking ----------------------------------------------------------------------------

    async def ask(
        self,
        session: SessionInput,
        item: PromptItem,
        call: ToolCall,
        preview: ToolPreview,
        *,
        cancelled: Callable[[], bool],
        announce_cancel: Callable[[PromptItem], Awaitable[None]],
    ) -> dict[str, Any]:
        """Raise a permission request and wait for its answer, a cancel, or the timer.

        Returns the ACP outcome (`{"outcome": "selected", "optionId": ...}` or
        `{"outcome": "cancelled"}`). `cancelled` says whether the prompt was cancelled.
        """
        request_id = str(workflow.uuid4())
        subject = str(call.arguments.get("command") or call.arguments.get("file_path") or "")
        state = PendingPermission(
            request_id=request_id,
            session_id=session.session_id,
            prompt_id=item.prompt_id,
            options=default_options(preview.kind, call.name, subject),
            policy=session.policy,
            designated_client_id=item.originator,
        )
        pending = Pending(state)
        self._pending[request_id] = pending
        await self._set_status("awaiting_permission")
        await self._emit(
            "permission_request",
            {
                "requestId": request_id,
                "sessionId": session.session_id,
                "toolCall": preview.tool_call,
                "options": [o.model_dump() for o in state.options],
            },
            prompt_id=item.prompt_id,
        )
        if item.coding_task is not None and workflow.patched(patches.SESSION_CODING_TASK_DECISIONS):
            # agentrt's coder: the question is on its tenant's decision queue too.
            await call_activity(
                SessionActivityContracts.TASK_DECISION,
                TaskDecisionInput(
                    task=item.coding_task,
                    session_id=session.session_id,
                    request_id=request_id,
                    title=f"agentrt's coder asks to run {call.name} {subject}"[:300],
                    options=[o.optionId for o in state.options],
                ),
                start_to_close_timeout=timedelta(minutes=1),
                retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=10)),
            )
        timeout_ms = session.permission_timeout_ms
        try:
            await workflow.wait_condition(
                lambda: pending.outcome is not None or cancelled(),
                timeout=timedelta(milliseconds=timeout_ms) if timeout_ms else None,
            )
        except TimeoutError:
            # The durable timer fired: resolve as cancelled, audit it, tell everyone.
            await self._emit(
                "permission_audit",
                {
                    "requestId": request_id,
                    "sessionId": session.session_id,
                    "event": "permission.timeout",
                    "timeoutMs": timeout_ms,
                },
                prompt_id=item.prompt_id,
            )
            await self.resolve(pending, {"outcome": "cancelled"}, originator=None)
        if pending.outcome is None:  # the prompt was cancelled while waiting
            await announce_cancel(item)
            await self.resolve(pending, {"outcome": "cancelled"}, originator=None)
        self._pending.pop(request_id, None)
        await self._set_status("running")
        assert pending.outcome is not None
        return pending.outcome

    async def resolve(
        self, pending: Pending, outcome: dict[str, Any], *, originator: str | None
    ) -> None:
        """Settle a request once (`permission_resolved`); later answers change nothing."""
        if pending.outcome is not None:
            return
        pending.outcome = outcome
        await self._emit(
            "permission_resolved",
            {"requestId": pending.state.request_id, "outcome": outcome},
            prompt_id=pending.state.prompt_id,
            originator=originator,
        )

    async def cancel_all(self) -> None:
        """Resolve every open request as cancelled (the prompt or the session ends)."""
        for pending in list(self._pending.values()):
            await self.resolve(pending, {"outcome": "cancelled"}, originator=None)


def _with_voters(state: PendingPermission, request: VoteRequest) -> PendingPermission:
    return state.model_copy(update={"eligible_voters": max(1, request.eligible_voters)})


def _vote(request: VoteRequest) -> Vote:
    return Vote(
        client_id=request.client_id,
        is_local=request.is_local,
        outcome=request.outcome,
        option_id=request.option_id,
    )
