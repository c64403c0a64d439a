"""`soa_propose_task`'s store side: the coding task (once per operation id) and, for
agentrt's coder, its session's registry row (runtime/coding_tasks/coder_session.py) under
the daemon's session cap; the activity (activities/standing_agents/tasks.py) starts the
task's workflow."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from runtime.coding_tasks.coder_session import task_session_row
from runtime.coding_tasks.contracts import (
    OWN_CODER,
    TASK_APPROVAL_MODES,
    TaskState,
    task_dir,
    task_session_id,
)
from runtime.coding_tasks.models import CodingTask
from runtime.sessions import registry
from runtime.sessions.models import DaemonSession
from runtime.standing_agents.contracts import AgentType
from runtime.standing_agents.tool_context import (
    BoundaryError,
    ToolContext,
    ToolInputError,
    op_uuid,
    text_argument,
)
from runtime.store import Store
from runtime.store.atomic import serialize


def require_soa(ctx: ToolContext) -> None:
    """soa_propose_task's first boundary (the only place it is checked)."""
    if ctx.agent_type != AgentType.SOA:
        raise BoundaryError("soa_propose_task belongs to the SOA only")


def stored_task(store: Store, op_id: str) -> CodingTask | None:
    """The task an earlier attempt of this call wrote, if any."""
    with store.session() as db:
        return db.exec(select(CodingTask).where(col(CodingTask.op_id) == op_id)).first()


def propose_task(
    ctx: ToolContext, arguments: dict[str, Any], *, workspace_cwd: str, max_sessions: int
) -> CodingTask:
    """The task row and its session's registry row (once per op id), written after every
    boundary check passed; the caller submits its session prompt.

    The session cap is checked and the session row inserted in one transaction under the
    cap's lock (`registry.admit`): N concurrent proposals never make more than
    `max_sessions` sessions live. Over the cap: BoundaryError, and nothing is written.
    """
    require_soa(ctx)
    task_id = op_uuid(ctx.op_id)

    def write(db: Session) -> CodingTask:
        serialize(db, registry.SESSION_CAP)
        # Under the lock: an attempt of this same call may have committed meanwhile (its
        # session counts against the cap: look for it first). A concurrent one that
        # committed after this look makes this write lose its race: the run again finds it.
        existing = db.exec(select(CodingTask).where(col(CodingTask.op_id) == ctx.op_id)).first()
        if existing is not None:
            return existing
        own = arguments.get("coder", "agentrt") == "agentrt"
        capabilities = sorted(set(arguments.get("capabilities") or []))
        preset_id = _optional_text(arguments, "presetId")
        approval_mode = _optional_text(arguments, "approvalMode")
        if approval_mode is not None and approval_mode not in TASK_APPROVAL_MODES:
            raise ToolInputError(f"approvalMode must be one of {', '.join(TASK_APPROVAL_MODES)}")
        row = CodingTask(
            task_id=task_id,
            tenant=ctx.tenant,
            instance_id=ctx.instance_id,
            title=text_argument(arguments, "title")[:500],
            prompt=text_argument(arguments, "prompt"),
            op_id=ctx.op_id,
            created_at=ctx.now,
            # Open for a registered coder to claim (agentrt's MCP tools), or run at once
            # by agentrt's own coder (its session, in the task's own directory).
            state=TaskState.OPEN.value,
            capabilities=capabilities,
            proposed_by=f"agent:{ctx.instance_id}",
            workspace=workspace_cwd,
            preset_id=preset_id,
            # The preset wins (resolved when the coder runs), as over REST.
            model=None if preset_id else _optional_text(arguments, "model"),
            approval_mode=approval_mode,
            updated_at=ctx.now,
        )
        if own:
            row.state = TaskState.RUNNING.value
            row.holder = OWN_CODER
            row.workspace = task_dir(workspace_cwd, task_id)
            row.claimed_at = row.heartbeat_at = ctx.now
        if not own:
            db.add(row)
            db.flush()
            return row
        try:
            registry.admit(db, max_sessions)
        except registry.SessionLimitReached:
            raise BoundaryError(f"the daemon runs its maximum of {max_sessions} sessions") from None
        db.add(row)
        if db.get(DaemonSession, task_session_id(task_id)) is None:
            # The coder's session runs in the task's own directory (its spawn).
            own_dir = task_dir(workspace_cwd, task_id)
            db.add(task_session_row(task_session_id(task_id), own_dir, task_id))
        db.flush()
        return row

    return ctx.store.run_transaction(write)


def _optional_text(arguments: dict[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"{name} must be a non-empty string")
    return value.strip()
