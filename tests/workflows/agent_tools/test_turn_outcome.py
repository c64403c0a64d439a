"""How a model turn ends: a tool that failed and was not retried successfully fails the turn."""

from __future__ import annotations

import pytest

from runtime.agent_tools.contracts import CallSummary
from workflows.agent_tools.turn_outcome import model_turn_outcome, unrecovered_failures


def _call(tool_id: str, status: str, diagnostic: str | None = None) -> CallSummary:
    return CallSummary(
        call_id=f"c-{tool_id}-{status}",
        result_id="r",
        tool_id=tool_id,
        status=status,
        diagnostic=diagnostic,
    )


@pytest.mark.parametrize(
    ("statuses", "failed"),
    [
        ([], []),
        (["COMPLETED"], []),
        (["FAILED"], [0]),
        (["UNAVAILABLE"], [0]),
        (["DENIED"], [0]),
        (["FAILED", "COMPLETED"], []),  # retried successfully
        (["COMPLETED", "FAILED"], [1]),  # the last word was a failure
        (["FAILED", "FAILED"], [0, 1]),
    ],
)
def test_unrecovered_failures(statuses: list[str], failed: list[int]) -> None:
    history = [_call("graph.get_node", status) for status in statuses]
    assert unrecovered_failures(history) == [history[i] for i in failed]


def test_a_failure_of_another_tool_is_not_recovered_by_this_one() -> None:
    history = [_call("graph.get_node", "FAILED"), _call("jobs.get", "COMPLETED")]
    assert unrecovered_failures(history) == history[:1]


def test_outcome() -> None:
    ok = [_call("investigation.search", "COMPLETED")]
    assert model_turn_outcome(ok, "Found it.") == ("completed", "COMPLETED", "Found it.")
    bad = [*ok, _call("graph.get_node", "FAILED", "invalid input: 'node_id' is required")]
    status, result, summary = model_turn_outcome(bad, "Found it.")
    assert (status, result) == ("failed", "FAILED")
    assert summary == (
        "A tool call failed (graph.get_node FAILED: invalid input: 'node_id' is required). "
        "The model's answer: Found it."
    )
