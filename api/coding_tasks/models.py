"""Wire bodies of the coding-task routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, Field

from runtime.coding_tasks.contracts import TaskView
from runtime.sessions.approval_modes import ApprovalMode
from runtime.wire import WireBody, WireModel

Capability = Annotated[str, Field(min_length=1, max_length=100)]


class TaskCreate(WireBody):
    title: str = Field(min_length=1, max_length=500)
    instructions: str = Field(min_length=1, max_length=100_000)
    capabilities: list[Capability] = Field(default_factory=list, max_length=50)
    preset_id: str | None = Field(default=None, min_length=1, max_length=200)
    model: str | None = Field(default=None, min_length=1, max_length=200)
    provider: str | None = Field(default=None, min_length=1, max_length=200)
    # The approval mode agentrt's own coder runs the task with (session-daemon modes).
    approval_mode: ApprovalMode | None = None
    # With its time zone (a naive time is refused: whose midnight would it be?).
    deadline: AwareDatetime | None = None
    # The client's retry key: the same requestId again creates nothing new.
    request_id: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class TaskList(WireModel):
    tenant: str
    tasks: list[TaskView]
