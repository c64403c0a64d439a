"""What a workflow tells its stream when a model call's chain ended without a reply.

`run_chain` (workflows/llm/chain.py) raises an ApplicationError of type
`all_providers_exhausted` (or `model_bad_request`: a 400 ended the chain, or
`device_flow_failed`) whose message names each attempt's provider, alias and outcome
and whose details carry the `ChainFailure`: a session prompt ends with `turn_error`,
an agent-tools turn with `agent.error`, both listing the attempts.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from runtime.llm.contracts import (
        ALL_PROVIDERS_EXHAUSTED,
        DEVICE_FLOW_FAILED,
        MODEL_BAD_REQUEST,
        AttemptReport,
    )
    from workflows.llm.chain import chain_failure

CHAIN_ENDED = (ALL_PROVIDERS_EXHAUSTED, MODEL_BAD_REQUEST, DEVICE_FLOW_FAILED)


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
