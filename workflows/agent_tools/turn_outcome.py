"""How a model turn ends, given the calls it made and the model's last answer.

Pure policy (no I/O), used by TurnWorkflow and the unit tests. The model has the last
word on *what* to answer, not on whether the turn succeeded: a tool call that failed
(FAILED, UNAVAILABLE, DENIED) and was not followed by a successful call of the same
tool means the turn did not do what it was asked, whatever the model says ("Found
it."). Such a turn ends `failed` (result `FAILED`), its summary naming each failed
call first and then quoting the model.
"""

from __future__ import annotations

from runtime.agent_tools.contracts import CallSummary, TurnStatus

UNSUCCESSFUL = frozenset({"FAILED", "UNAVAILABLE", "DENIED"})
MAX_SUMMARY_CHARS = 2000


def unrecovered_failures(history: list[CallSummary]) -> list[CallSummary]:
    """The unsuccessful calls not followed by a COMPLETED call of the same tool."""
    failures: list[CallSummary] = []
    for index, call in enumerate(history):
        if call.status not in UNSUCCESSFUL:
            continue
        later = history[index + 1 :]
        if not any(c.tool_id == call.tool_id and c.status == "COMPLETED" for c in later):
            failures.append(call)
    return failures


def model_turn_outcome(history: list[CallSummary], answer: str) -> tuple[TurnStatus, str, str]:
    """(status, result, summary) of a model turn that ended without a research to decide."""
    failures = unrecovered_failures(history)
    if not failures:
        return "completed", "COMPLETED", answer
    failed = "; ".join(f"{c.tool_id} {c.status}: {c.diagnostic or 'no detail'}" for c in failures)
    summary = f"A tool call failed ({failed}). The model's answer: {answer}"
    return "failed", "FAILED", summary[:MAX_SUMMARY_CHARS]
