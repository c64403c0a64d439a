"""The loop guards (issue 21, item 10): two more rules beside the STUCK guard's three
`phase_blocked` turns, each closing the agent with a `stuck` request naming its rule.

- **Repeated decision**: the last N planned turns (default 5,
  `AGENTRT_AGENT_MAX_REPEATED_DECISIONS`) ended with the same decision: the same kind,
  the same tool calls with the same arguments and outcomes, the same wait condition and
  summary (`decision_hash`, SHA-256 over their canonical JSON). Only a turn with a model
  call counts; an idle tick (no call, by design the same every time) leaves the count.
- **Self wake**: more than M planned turns (default 12, `AGENTRT_AGENT_MAX_SELF_WAKES_PER_HOUR`)
  in the last hour on the agent's own heartbeat, with no operator or external event
  since the first of them: an agent that keeps waking itself to spend.

Pure: the store counts, this decides.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel

REPEATED_DECISION: Final = "repeated_decision"
SELF_WAKE: Final = "self_wake"
PHASE_BLOCKED_RULE: Final = "phase_blocked"
SELF_WAKE_WINDOW_SECONDS: Final = 3600


def decision_hash(
    *,
    decision_kind: str,
    actions: Sequence[Mapping[str, Any]],
    wait_condition: str | None,
    reasoning_summary: str | None,
) -> str:
    """SHA-256 over the canonical JSON of what a turn decided (`actions`: each call's
    tool, arguments and outcome)."""
    body = {
        "kind": decision_kind,
        "actions": [
            {"tool": a.get("tool"), "arguments": a.get("arguments"), "outcome": a.get("outcome")}
            for a in actions
        ],
        "waitCondition": wait_condition,
        "reasoningSummary": reasoning_summary,
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class LoopVerdict(BaseModel):
    # What to persist: the last planned turn's decision hash and how many in a row had it.
    last_decision_hash: str | None
    repeated_decisions: int
    # The rule that closes the agent, if one fired.
    rule: str | None = None
    detail: str | None = None


def after_planned_turn(
    *,
    planned: bool,
    this_hash: str,
    last_hash: str | None,
    repeated: int,
    max_repeated: int,
    self_wakes_in_window: int,
    max_self_wakes: int,
) -> LoopVerdict:
    """The counters after a turn, and the loop rule that fired (None: none).

    `self_wakes_in_window`: the planned heartbeat turns of the last hour since the last
    operator or external event, this one included (0 when this turn is not one)."""
    if not planned:
        return LoopVerdict(last_decision_hash=last_hash, repeated_decisions=repeated)
    count = repeated + 1 if this_hash == last_hash else 1
    verdict = LoopVerdict(last_decision_hash=this_hash, repeated_decisions=count)
    if count >= max_repeated:
        verdict.rule = REPEATED_DECISION
        verdict.detail = f"the last {count} turns ended with the same decision"
    elif self_wakes_in_window > max_self_wakes:
        verdict.rule = SELF_WAKE
        verdict.detail = (
            f"{self_wakes_in_window} planned turns on its own heartbeat in the last hour,"
            f" more than {max_self_wakes}, with no operator or external event"
        )
    return verdict
