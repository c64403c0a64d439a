"""The registry row of agentrt's coder's session for a coding task: written with the task
when an agent proposes it (under the daemon's session cap), and found or written again
when the task's prompt goes to its coder (activities/coding_tasks/coder_session.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session

from runtime.sessions.models import DaemonSession
from runtime.store import Store


def task_session_row(session_id: str, workspace_cwd: str, task_id: str) -> DaemonSession:
    """The coder's session of `task_id`, as the registry lists it with its workspace's."""
    return DaemonSession(
        session_id=session_id,
        workspace_cwd=workspace_cwd,
        scope="thread",
        display_name=f"agent task {task_id}",
        created_at=datetime.now(UTC),
    )


def ensure_task_session(store: Store, session_id: str, workspace_cwd: str, task_id: str) -> None:
    """The task's session row in the registry (listed with the workspace's sessions).

    `propose_task` writes it with the task (under the cap); this finds it, and writes it
    for a task proposed before it did."""

    def write(db: Session) -> None:
        # A concurrent writer of the same row makes this write lose its race: the run
        # again finds the row.
        if db.get(DaemonSession, session_id) is None:
            db.add(task_session_row(session_id, workspace_cwd, task_id))
            db.flush()

    store.run_transaction(write)
