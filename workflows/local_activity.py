"""Local activities whose last failure is the same exception live and on replay.

Temporal's Python SDK (1.35, sdk-core) resolves a local activity's final timeout as an
`ActivityError` (cause: `TimeoutError`) while the workflow runs, but as the bare
`TimeoutError` of the recorded marker when it replays. Code that handles `ActivityError`
(a `turn_error`, "read again after the next timer") then takes another path after any
worker restart: a nondeterminism error or a failed workflow
(tests/workflows/test_local_activity.py shows it). `execute_local` turns the replayed
form back into an `ActivityError`, so one handler covers both runs. Every local activity
in workflows/ goes through it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar, overload

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, RetryState
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

T = TypeVar("T")


@overload
async def execute_local(
    activity: str,
    arg: Any,
    *,
    result_type: type[T],
    start_to_close_timeout: timedelta,
    retry_policy: RetryPolicy | None = None,
) -> T: ...


@overload
async def execute_local(
    activity: str,
    arg: Any,
    *,
    result_type: None = None,
    start_to_close_timeout: timedelta,
    retry_policy: RetryPolicy | None = None,
) -> None: ...


async def execute_local(
    activity: str,
    arg: Any,
    *,
    result_type: type[Any] | None = None,
    start_to_close_timeout: timedelta,
    retry_policy: RetryPolicy | None = None,
) -> Any:
    """`workflow.execute_local_activity` by name with one argument (None: none), its last
    timeout an `ActivityError` live and on replay."""
    args = [] if arg is None else [arg]
    try:
        return await workflow.execute_local_activity(
            activity,
            args=args,
            result_type=result_type,
            start_to_close_timeout=start_to_close_timeout,
            retry_policy=retry_policy,
        )
    except TemporalTimeoutError as err:
        raise ActivityError(
            "Local activity timed out",
            scheduled_event_id=0,
            started_event_id=0,
            identity="",
            activity_type=str(activity),
            activity_id="",
            retry_state=RetryState.TIMEOUT,
        ) from err
