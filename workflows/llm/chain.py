"""The fallback chain, walked by a workflow (issue 11 "The chain"): shared by
SessionWorkflow, TurnWorkflow and StandingAgentWorkflow.

`run_chain` asks the caller to make one attempt at a time (`attempt_fn`: it executes the
caller's own model-step activity for that `AttemptSpec`, with `ATTEMPT_RETRY`, i.e. no
Temporal retries: the chain owns them) and decides what follows with the pure
`runtime.llm.chain`. Deterministic: waits are `workflow.sleep`, counters are counted
outside replay only.

An attempt whose activity timed out (its worker was killed) is reported `timeout` and
the same credential is tried again as the call's next attempt (up to
MAX_LOST_ATTEMPTS, then the chain moves on as for a provider's timeout); if the lost
attempt had in fact succeeded, the next attempt's gateway finds the stored reply and
returns it without paying again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from workflows.activity_calls import call_local_activity

with workflow.unsafe.imports_passed_through():
    from runtime.llm import metrics
    from runtime.llm.chain import first_attempt, next_attempt
    from runtime.llm.contracts import (
        ALL_PROVIDERS_EXHAUSTED,
        DEVICE_FLOW_FAILED,
        MODEL_BAD_REQUEST,
        AttemptOutcome,
        AttemptReport,
        AttemptSpec,
        ChainFailure,
        ChainPlan,
        LlmActivityContracts,
        ModelBinding,
        ResolveChainInput,
    )
    from workflows.device_flow.pause import await_device_flow

# Each attempt is one activity execution: a retry is the chain's next attempt.
ATTEMPT_RETRY = RetryPolicy(maximum_attempts=1)
_RESOLVE_TIMEOUT = timedelta(seconds=30)
_RESOLVE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=10,
)

# An attempt whose worker was lost is made again (a new attempt, same credential) this
# many times per call; after that the chain treats it as the provider's timeout.
MAX_LOST_ATTEMPTS = 3
AttemptFn = Callable[[AttemptSpec], Awaitable[AttemptReport]]
# Wait for the device flow of a provider: None once authorized, else the flow's errorKind.
DeviceFlowWait = Callable[[str], Awaitable[str | None]]


@dataclass
class ChainResult:
    """The successful attempt, and every attempt of the call in order (it included)."""

    report: AttemptReport
    attempts: list[AttemptReport] = field(default_factory=list)


async def resolve_chain(
    site: str,
    model_override: str | None = None,
    override_binding: ModelBinding | None = None,
    preset_override: str | None = None,
) -> ChainPlan:
    """The call's plan from the live config (a local activity: read at every call)."""
    plan: ChainPlan = await call_local_activity(
        LlmActivityContracts.RESOLVE_CHAIN,
        ResolveChainInput(
            site=site,
            model_override=model_override,
            override_binding=override_binding,
            preset_override=preset_override,
        ),
        start_to_close_timeout=_RESOLVE_TIMEOUT,
        retry_policy=_RESOLVE_RETRY,
    )
    return plan


async def run_chain(
    plan: ChainPlan,
    call_id: str,
    attempt_fn: AttemptFn,
    *,
    workspace: str | None = None,
    session_id: str | None = None,
    device_flow: DeviceFlowWait | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> ChainResult:
    """Walk `plan` until an attempt succeeds.

    Raises:
        ApplicationError: type ALL_PROVIDERS_EXHAUSTED (every attempt failed),
            MODEL_BAD_REQUEST (a 4xx other than 401/403/429 ended the chain) or
            DEVICE_FLOW_FAILED (a credential's device flow failed: its errorKind is the
            message); details `[ChainFailure]` in each case.
        asyncio.CancelledError: `cancelled` (the caller's cancel) held during a pause on a
            device flow (workflows/device_flow/pause.py).
        ActivityError: the attempt's activity failed for a reason of its own (not a
            timeout), which no other provider would fix.
    """
    attempts: list[AttemptReport] = []
    spec = first_attempt(plan, call_id)
    paused_for: set[int] = set()
    lost = 0
    while spec is not None:
        report, worker_lost = await _attempt(spec, attempt_fn)
        flow = report.device_flow_required
        if flow is not None and spec.attempt_index not in paused_for:
            wait = device_flow or _device_flow_wait(workspace, session_id, cancelled)
            # Once per attempt: a flow that "succeeds" without a usable token would
            # otherwise pause forever; the second time it is an auth_error.
            paused_for.add(spec.attempt_index)
            error_kind = await wait(flow)
            if error_kind is None:
                continue  # the same attempt, with the new token
            attempts.append(report.model_copy(update={"error": error_kind}))
            failure = ChainFailure(attempts=attempts)
            raise ApplicationError(error_kind, failure, type=DEVICE_FLOW_FAILED, non_retryable=True)
        attempts.append(report)
        if report.outcome is AttemptOutcome.OK:
            return ChainResult(report=report, attempts=attempts)
        if worker_lost and lost < MAX_LOST_ATTEMPTS:
            # The worker died, not the provider: the same credential again, as the call's
            # next attempt (which returns the reply if the lost one had stored it).
            lost += 1
            spec = spec.model_copy(update={"attempt_index": spec.attempt_index + 1})
            continue
        step = next_attempt(plan, spec, report.outcome, report.retry_after_s)
        if step.attempt is None:
            break
        if step.advanced and not workflow.unsafe.is_replaying():
            metrics.fallback_advance.add(1, {"site": plan.site, "preset": plan.preset_id})
        if step.wait_s > 0:
            await workflow.sleep(timedelta(seconds=step.wait_s))
        spec = step.attempt
    failure = ChainFailure(attempts=attempts)
    if attempts and attempts[-1].outcome is AttemptOutcome.BAD_REQUEST:
        message = "the model provider refused the request: " + failure.message().split(": ", 1)[-1]
        raise ApplicationError(message, failure, type=MODEL_BAD_REQUEST, non_retryable=True)
    if not workflow.unsafe.is_replaying():
        metrics.all_providers_exhausted.add(1, {"site": plan.site, "preset": plan.preset_id})
    raise ApplicationError(
        failure.message(), failure, type=ALL_PROVIDERS_EXHAUSTED, non_retryable=True
    )


def chain_failure(err: BaseException) -> ChainFailure | None:
    """The ChainFailure an error of `run_chain` carries, if it is one."""
    if not isinstance(err, ApplicationError) or not err.details:
        return None
    detail = err.details[0]
    if isinstance(detail, ChainFailure):
        return detail
    if isinstance(detail, dict):
        return ChainFailure.model_validate(detail)
    return None


async def _attempt(spec: AttemptSpec, attempt_fn: AttemptFn) -> tuple[AttemptReport, bool]:
    """The attempt's report, and whether its activity was lost (timed out)."""
    try:
        return await attempt_fn(spec), False
    except ActivityError as err:
        if not isinstance(err.cause, TemporalTimeoutError):
            raise
        # The attempt's worker died (the gateway heartbeats while the provider thinks, and
        # reports a provider's own silence as a `timeout` outcome): a lost attempt.
        kind = err.cause.type.name if err.cause.type is not None else "unknown"
        lost = AttemptReport(
            attempt_id=f"{spec.call_id}/a{spec.attempt_index}",
            outcome=AttemptOutcome.TIMEOUT,
            provider=spec.provider,
            credential_alias=spec.credential_alias,
            error=f"the attempt's activity timed out ({kind})",
        )
        return lost, True


def _device_flow_wait(
    workspace: str | None, session_id: str | None, cancelled: Callable[[], bool] | None
) -> DeviceFlowWait:
    """The device-flow pause (workflows/device_flow/pause.py): start or join the
    provider's flow, tell the session (if the call is a session's), wait for its end or
    the caller's cancel. `workspace` None: the worker's own workspace (a turn's or an
    agent's call)."""

    async def pause(provider_id: str) -> str | None:
        outcome = await await_device_flow(provider_id, workspace, session_id, cancelled=cancelled)
        if outcome.authorized:
            return None
        return outcome.error_kind or "upstream_error"

    return pause
