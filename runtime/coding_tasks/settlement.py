"""What a coding task's settlement tells others, in the transaction that settles it: its
coder's open questions end (superseded), the `coding_task.settled` webhook is owed, and the
proposing agent gets its `DependencyCompleted` (deduplicated by the task)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session

from runtime.coding_tasks.models import CodingTask
from runtime.notifications import outbox
from runtime.standing_agents import queue
from runtime.standing_agents.approvals import supersede_coder_questions
from runtime.standing_agents.contracts import EventKind
from runtime.standing_agents.models import AgentInstance


def settled_event_id(task_id: str) -> str:
    """The proposing agent's `DependencyCompleted` event id: one per task."""
    return f"task-settled/{task_id}"


def announce_in(db: Session, row: CodingTask) -> None:
    """The coder's questions about the task end with it (superseded); the proposing
    agent's `DependencyCompleted` (deduplicated by the task)."""
    supersede_coder_questions(db, row.tenant, row.task_id, f"the coding task {row.state}")
    outbox.enqueue(
        db.connection(),
        "coding_task.settled",
        key=row.task_id,
        subject=f"coding-task/{row.tenant}/{row.task_id}",
        tenant=row.tenant,
        data={
            "tenant": row.tenant,
            "taskId": row.task_id,
            "title": row.title,
            "state": row.state,
            "holder": row.holder,
            "summary": (row.summary or "")[:2000],
        },
        now=datetime.now(UTC),
    )
    if row.instance_id is None:
        return
    instance = db.get(AgentInstance, row.instance_id)
    if instance is None:
        return
    text = f"Coding task {row.title!r} {row.state}"
    if row.summary:
        text += f": {row.summary[:2000]}"
    queue.enqueue_in(
        db,
        tenant=row.tenant,
        instance_id=row.instance_id,
        kind=EventKind.DEPENDENCY_COMPLETED,
        payload={
            "taskId": row.task_id,
            "title": row.title,
            "state": row.state,
            "holder": row.holder,
            "summary": (row.summary or "")[:4000],
            "artifacts": list(row.artifacts or [])[:20],
            "text": text,
        },
        event_id=settled_event_id(row.task_id),
        generation=instance.generation,
    )
