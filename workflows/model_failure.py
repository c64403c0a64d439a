"""What a workflow tells its stream when a model call's chain ended without a reply.

`run_chain` (workflows/llm_chain.py) raises an ApplicationError of type
`all_providers_exhausted` (or `model_bad_request`: a 400 ended the chain, or
`device_flow_failed`) whose message names each attempt's provider, alias and outcome
and whose details carry the `ChainFailure`: a session prompt ends with `turn_error`,
an agent-tools turn with `agent.error`, both listing the attempts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

with workflow.unsafe.imports_passed_through():
    from runtime.llm.routing import (
        ALL_PROVIDERS_EXHAUSTED,
        DEVICE_FLOW_FAILED,
        MODEL_BAD_REQUEST,
        AttemptReport,
    )
    from workflows.llm_chain import chain_failure

CHAIN_ENDED = (ALL_PROVIDERS_EXHAUSTED, MODEL_BAD_REQUEST, DEVICE_FLOW_FAILED)
# How many times one attempt is made again after its worker was lost (then the chain
# counts it as a timeout and moves on).
WORKER_LOSSES = 3

T = TypeVar("T")


async def surviving_worker_loss(run: Callable[[], Awaitable[T]]) -> T:
    """Run an attempt's activity again when its worker died under it.

    The attempt's activity heartbeats while it waits for the provider (and the HTTP
    client has its own timeouts), so a heartbeat timeout means the worker was lost —
    killed, restarted — not that the provider failed: the same attempt is made again
    (its gateway returns the reply if the lost run had stored one: never paid twice),
    as the single model-step activity was retried before the chain. The chain's own
    policy (a timeout advances to the next entry) applies to any other timeout, and
    after `WORKER_LOSSES` losses in a row.
    """
    losses = 0
    while True:
        try:
            return await run()
        except ActivityError as err:
            cause = err.cause
            lost = isinstance(cause, TimeoutError) and cause.type == TimeoutType.HEARTBEAT
            losses += 1
            if not lost or losses > WORKER_LOSSES:
                raise


def is_exhausted(err: BaseException) -> bool:
    """Whether `err` is a model call's chain ending without a reply."""
    return isinstance(err, ApplicationError) and err.type in CHAIN_ENDED


def attempt_views(err: ApplicationError, *, camel: bool) -> list[dict[str, Any]]:
    """The failed attempts as an event lists them: camelCase on a session's stream (its
    protocol's case), snake_case on the agent-tools stream."""
    failure = chain_failure(err)
    if failure is None:
        return []
    return [_view(report, camel) for report in failure.attempts[:20]]


def _view(report: AttemptReport, camel: bool) -> dict[str, Any]:
    view = {
        "attempt_id": report.attempt_id,
        "provider": report.provider,
        "credential_alias": report.credential_alias,
        "outcome": report.outcome.value,
        "http_status": report.http_status,
    }
    if not camel:
        return view
    return {_camel(key): value for key, value in view.items()}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)
