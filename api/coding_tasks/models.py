"""Wire bodies of the coding-task routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from runtime.coding_tasks.contracts import TaskView
from runtime.policy.approval import ApprovalMode

Capability = Annotated[str, Field(min_length=1, max_length=100)]


class TaskCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=500)
    instructions: str = Field(min_length=1, max_length=100_000)
    capabilities: list[Capability] = Field(default_factory=list, max_length=50)
    presetId: str | None = Field(default=None, min_length=1, max_length=200)
    model: str | None = Field(default=None, min_length=1, max_length=200)
    provider: str | None = Field(default=None, min_length=1, max_length=200)
    # The approval mode agentrt's own coder runs the task with (session-daemon modes).
    approvalMode: ApprovalMode | None = None
    # With its time zone (a naive time is refused: whose midnight would it be?).
    deadline: AwareDatetime | None = None
    # The client's retry key: the same requestId again creates nothing new.
    requestId: str | None = Field(
        default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._:-]+$"
    )


class TaskList(BaseModel):
    tenant: str
    tasks: list[TaskView]
