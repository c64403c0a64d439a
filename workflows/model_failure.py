"""What a workflow tells its stream when every attempt of a model call failed.

`run_chain` (workflows/llm_chain.py) raises an ApplicationError of type
`all_providers_exhausted` whose message names each attempt's provider, alias and
outcome and whose details carry the `ChainFailure`: a session prompt ends with
`turn_error`, an agent-tools turn with `agent.error`, both listing the attempts.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from runtime.llm.routing import ALL_PROVIDERS_EXHAUSTED, AttemptReport, ChainFailure


def is_exhausted(err: BaseException) -> bool:
    return isinstance(err, ApplicationError) and err.type == ALL_PROVIDERS_EXHAUSTED


def chain_failure(err: ApplicationError) -> ChainFailure | None:
    """The attempts of an exhausted chain (the error's first detail), if it carries them."""
    details = err.details
    if not details:
        return None
    first = details[0]
    if isinstance(first, ChainFailure):
        return first
    try:
        return ChainFailure.model_validate(first)
    except ValueError:
        return None


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
