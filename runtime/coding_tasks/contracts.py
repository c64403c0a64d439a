"""The coding tasks' vocabulary: states, the wire view, the refusals (WireError models),
the workflow's contracts. Every layer names coding tasks through these."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel
from temporalio.common import SearchAttributePair

from runtime.activity_contract import ActivityContract
from runtime.failures import WireError
from runtime.search_attributes import starting

WORKFLOW_NAME: Final = "CodingTaskWorkflow"
# The search attribute `AgentrtKind` of a task's workflow.
TASK_KIND: Final = "coding_task"
WAKE_SIGNAL: Final = "wake"
# agentrt's own coder: start it (the API, after claiming the task for it), and its
# session's report that the task's prompt ended.
SPAWN_SIGNAL: Final = "spawn_coder"
CODER_FINISHED_SIGNAL: Final = "coder_finished"
# The holder of a task agentrt's own coder (a session of its own) runs.
OWN_CODER: Final = "agentrt-coder"
# The kind the settlement's event has for the proposing agent (spec §3.1).
SETTLED_EVENT_KIND: Final = "DependencyCompleted"


class TaskState(StrEnum):
    """A coding task's state: open, held (`claimed`, then `running` once its holder
    reports progress or agentrt's coder has its session), then settled (`SETTLED`). A
    holder silent past the claim timeout loses the task: it is open again."""

    OPEN = "open"
    CLAIMED = "claimed"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


HELD: Final = frozenset({TaskState.CLAIMED, TaskState.RUNNING})
SETTLED: Final = frozenset(
    {TaskState.SUCCEEDED, TaskState.FAILED, TaskState.CANCELLED, TaskState.EXPIRED}
)
Outcome = Literal["succeeded", "failed"]


def task_workflow_id(tenant: str, task_id: str) -> str:
    """The id of the task's CodingTaskWorkflow."""
    return f"coding-task/{tenant}/{task_id}"


def task_search_attributes(tenant: str, state: str) -> list[SearchAttributePair[Any]]:
    """A task's workflow's search attributes when it starts: a coding task, of its tenant,
    in the task's state (the workflow keeps the state current from then on)."""
    return starting(TASK_KIND, tenant, status=state)


# The approval modes a SOA may give the coder of a task it proposes: a human answers its
# calls (`default`), it only plans (`plan`), or its edits, in the task's own directory, go
# unasked (`auto-edit`). Never `auto` or `yolo`: an agent does not waive the human's say
# over its own coder's commands (an operator may, over REST).
TASK_APPROVAL_MODES: Final = ("plan", "default", "auto-edit")

# agentrt's coder works in `<workspace>/.agentrt-tasks/<taskId>` (activities/coding_tasks/task).
TASKS_DIR: Final = ".agentrt-tasks"


def task_dir(root: str, task_id: str) -> str:
    """The directory agentrt's coder works on the task in: `<root>/.agentrt-tasks/<taskId>`."""
    return str(Path(root) / TASKS_DIR / task_id)


def task_session_id(task_id: str) -> str:
    """The session agentrt's coder runs a task in, derived from the task: a retry finds
    the same one."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"task-session/{task_id}"))


def task_prompt_id(task_id: str) -> str:
    """The prompt agentrt's coder runs a task with (derived: a retry submits it once)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"task-prompt/{task_id}"))


class TaskNote(BaseModel):
    """A note on a task: its holder's progress note, or who assigned it to whom. `key`
    makes a holder's note idempotent (a note whose key the task has is not added again)."""

    at: str
    by: str
    text: str
    key: str | None = None


class TaskView(BaseModel):
    """A coding task as clients read it."""

    taskId: str
    tenant: str
    title: str
    instructions: str
    capabilities: list[str]
    workspace: str | None = None
    presetId: str | None = None
    model: str | None = None
    provider: str | None = None
    approvalMode: str | None = None
    proposedBy: str
    proposingAgent: str | None = None
    holder: str | None = None
    state: TaskState
    claimedAt: str | None = None
    heartbeatAt: str | None = None
    deadline: str | None = None
    notes: list[TaskNote]
    outcome: str | None = None
    summary: str | None = None
    artifacts: list[dict[str, Any]]
    sessionId: str | None = None
    createdAt: str
    settledAt: str | None = None
    settledBy: str | None = None
    workflowId: str


# -- refusals ----------------------------------------------------------------------------------


class TaskNotFound(WireError):
    """No coding task of this id in the tenant: 404."""

    kind: Literal["coding_task_not_found"] = "coding_task_not_found"
    task_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No coding task "{self.task_id}"',
            "code": self.kind,
            "taskId": self.task_id,
        }


class TaskConflict(WireError):
    """A transition the task's state (or holder) does not allow: 409."""

    kind: Literal["coding_task_conflict"] = "coding_task_conflict"
    code: Literal[
        "task_not_open", "task_not_held", "not_task_holder", "task_settled", "capabilities_missing"
    ]
    message: str
    task_id: str
    state: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": self.message,
            "code": self.code,
            "taskId": self.task_id,
            "state": self.state,
        }


class InvalidTask(WireError):
    """A task, or a report on one, that breaks a rule (its `message`): 400."""

    kind: Literal["invalid_coding_task"] = "invalid_coding_task"
    message: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind}


# -- the workflow's contracts ----------------------------------------------------------------


class CodingTaskInput(BaseModel):
    """CodingTaskWorkflow's input: the task it keeps the timers of, and what a run hands
    the next one across continue-as-new."""

    tenant: str
    task_id: str
    # How long a holder may go without a heartbeat before the task is open again.
    claim_timeout_ms: int
    # Carried across continue-as-new: a spawn not yet run, a coder's report not yet
    # applied (a signal is never lost to a new run).
    spawn: bool = False
    report: CoderReport | None = None


class TaskTimers(BaseModel):
    """What the workflow waits on (read from the store at every turn of its loop)."""

    exists: bool = True
    state: TaskState = TaskState.OPEN
    holder: str | None = None
    deadline: datetime | None = None
    claim_expires_at: datetime | None = None
    lease_released: bool = False
    # agentrt's coder's session (its prompt is cancelled when the task is settled under it).
    session_id: str | None = None


class ExpireInput(BaseModel):
    """TIMERS' and EXPIRE's argument: the task and the workflow's claim timeout; `now` is
    the workflow's time, at which EXPIRE settles or reopens the task (TIMERS ignores it)."""

    tenant: str
    task_id: str
    claim_timeout_ms: int
    now: datetime


class ExpireResult(BaseModel):
    """EXPIRE's result: whose claim ran out, and whether the task is settled now."""

    # The holder whose claim ran out (its Windows lease is released), if one did.
    lost_holder: str | None = None
    settled: bool = False


class SettleInput(BaseModel):
    """SPAWN_CODER's and WAKE_AGENT's argument: the task, by tenant and id."""

    tenant: str
    task_id: str


class CoderReport(BaseModel):
    """The end of agentrt's coder's prompt (what the session reports)."""

    session_id: str
    stop_reason: str


class SpawnResult(BaseModel):
    """SPAWN_CODER's result: the session agentrt's coder runs the task in, or why there
    is none yet (all false and None: the task is gone, or no longer held by agentrt's coder)."""

    # The tenant runs its maximum of coders: the task waits for a slot.
    waiting: bool = False
    session_id: str | None = None
    # The coder's session ended before its prompt was submitted (a retried spawn).
    session_ended: bool = False


class OwnCoderDone(BaseModel):
    """COMPLETE_OWN's argument: settle the task with its coder's report."""

    tenant: str
    task_id: str
    report: CoderReport


class CodingTaskActivity(StrEnum):
    """The coding-task activities, by name: activities/coding_tasks/task.py implements
    them, and CodingTaskWorkflow calls them by these names."""

    TIMERS = "coding_task.timers"  # local
    EXPIRE = "coding_task.expire"
    WAKE_AGENT = "coding_task.wake_agent"
    SPAWN_CODER = "coding_task.spawn_coder"
    COMPLETE_OWN = "coding_task.complete_own"
    CODER_ALIVE = "coding_task.coder_alive"


# The stop reason of agentrt's coder whose session ended without reporting its prompt's
# end (terminated, failed, timed out, closed): its task fails instead of staying held.
SESSION_ENDED: Final = "session_ended"


class CoderAliveInput(BaseModel):
    """CODER_ALIVE's argument: the session of agentrt's coder to look at."""

    session_id: str


CodingTaskInput.model_rebuild()


class CodingTaskActivityContracts:
    """Each CodingTaskActivity with the types of its argument and result."""

    TIMERS: Final = ActivityContract(CodingTaskActivity.TIMERS, ExpireInput, TaskTimers)
    EXPIRE: Final = ActivityContract(CodingTaskActivity.EXPIRE, ExpireInput, ExpireResult)
    SPAWN_CODER: Final = ActivityContract(CodingTaskActivity.SPAWN_CODER, SettleInput, SpawnResult)
    COMPLETE_OWN: Final = ActivityContract(
        CodingTaskActivity.COMPLETE_OWN, OwnCoderDone, type(None)
    )
    CODER_ALIVE: Final = ActivityContract(CodingTaskActivity.CODER_ALIVE, CoderAliveInput, bool)
    WAKE_AGENT: Final = ActivityContract(CodingTaskActivity.WAKE_AGENT, SettleInput, type(None))
