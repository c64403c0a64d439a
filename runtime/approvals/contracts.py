"""What crosses Temporal for the approvals' clock (runtime/approvals/clock.py)."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel

from runtime.activity_contract import ActivityContract

CLOCK_WORKFLOW_NAME: Final = "ApprovalClockWorkflow"
# What a process wakes to give new requests their timeout: its task queue's clock.
CLOCK_WORKFLOW_ID: Final = "approvals-clock"
CLOCK_WAKE_SIGNAL: Final = "wake"
KEEP_TIME: Final = "approvals.keep_time"


class ClockResult(BaseModel):
    """What one pass did, and when the clock has something to do next (ms from now;
    None: nothing timed is pending)."""

    timed: int = 0
    warned: int = 0
    expired: int = 0
    next_in_ms: int | None = None


def clock_workflow_id(task_queue: str) -> str:
    """The clock of the deployment that `task_queue` serves (one per deployment)."""
    return f"{CLOCK_WORKFLOW_ID}/{task_queue}"


KEEP_TIME_CONTRACT: Final[ActivityContract[None, ClockResult]] = ActivityContract(
    KEEP_TIME, None, ClockResult
)
