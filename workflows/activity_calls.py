"""How a workflow calls an activity: through its contract (runtime/activity_contract.py), so
that mypy checks the argument and types the result, and no call passes a `result_type`.

`call_activity` runs an activity; `call_local_activity` a local activity, whose last failure
is the same exception live and on replay. Temporal's Python SDK (1.35, sdk-core) resolves a local
activity's final timeout as an `ActivityError` (cause: `TimeoutError`) while the workflow
runs, but as the bare `TimeoutError` of the recorded marker when it replays. Code that
handles `ActivityError` (a `turn_error`, "read again after the next timer") would then take
another path after any worker restart: a nondeterminism error or a failed workflow
(tests/workflows/test_local_activity.py shows it). `call_local_activity` turns the replayed form
back into an `ActivityError`, so one handler covers both runs. Every local activity in
workflows/ goes through it, but the one branch that replays histories recorded before
that fix (`call_local_activity_as_recorded`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, RetryState
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from runtime.activity_contract import ActivityContract

A = TypeVar("A")
R = TypeVar("R")


def _args(contract: ActivityContract[A, R], arg: A) -> list[Any]:
    return [] if contract.arg is None else [arg]


def _result_type(contract: ActivityContract[A, R]) -> type[Any] | None:
    """None for an activity that returns nothing (the SDK then decodes no result)."""
    result: type[Any] = contract.result
    return None if result is type(None) else result


async def call_activity(
    contract: ActivityContract[A, R],
    arg: A,
    *,
    start_to_close_timeout: timedelta | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
) -> R:
    """`workflow.execute_activity` of `contract`'s activity with `arg` (None for an
    activity that takes no argument)."""
    result: R = await workflow.execute_activity(
        contract.name,
        args=_args(contract, arg),
        result_type=_result_type(contract),
        start_to_close_timeout=start_to_close_timeout,
        schedule_to_close_timeout=schedule_to_close_timeout,
        heartbeat_timeout=heartbeat_timeout,
        retry_policy=retry_policy,
    )
    return result


async def call_local_activity(
    contract: ActivityContract[A, R],
    arg: A,
    *,
    start_to_close_timeout: timedelta,
    retry_policy: RetryPolicy | None = None,
) -> R:
    """`workflow.execute_local_activity` of `contract`'s activity, its last timeout an
    `ActivityError` live and on replay."""
    try:
        return await call_local_activity_as_recorded(
            contract, arg, start_to_close_timeout=start_to_close_timeout, retry_policy=retry_policy
        )
    except TemporalTimeoutError as err:
        raise ActivityError(
            "Local activity timed out",
            scheduled_event_id=0,
            started_event_id=0,
            identity="",
            activity_type=contract.name,
            activity_id="",
            retry_state=RetryState.TIMEOUT,
        ) from err


async def call_local_activity_as_recorded(
    contract: ActivityContract[A, R],
    arg: A,
    *,
    start_to_close_timeout: timedelta,
    retry_policy: RetryPolicy | None = None,
) -> R:
    """`workflow.execute_local_activity` as the SDK answers it (a replayed last timeout is a
    bare `TimeoutError`): only for a branch that replays histories recorded that way."""
    result: R = await workflow.execute_local_activity(
        contract.name,
        args=_args(contract, arg),
        result_type=_result_type(contract),
        start_to_close_timeout=start_to_close_timeout,
        retry_policy=retry_policy,
    )
    return result
