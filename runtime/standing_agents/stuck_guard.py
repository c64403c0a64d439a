"""The STUCK guard (spec standing-agents §3.3.4).

An authentic blocked turn (the planner ended with `phase_blocked`, mapped to
`WaitingForEvent`) increments `consecutive_blocked_turns`; any other planned turn resets
it to 0. A tick that made no model call (idle, the credit spent, a mode that does not
resolve) is no turn of the planner's: it leaves the counter as it was, so idle heartbeats
between blocked turns do not hide an agent that keeps blocking.
The counter is always persisted; the agent is closed only when the guard is enforced and
the counter reaches `max_blocked` (default 3). Closing raises a "stuck" attention request.
"""

from __future__ import annotations

from pydantic import BaseModel


class StuckVerdict(BaseModel):
    """What the complete-tick write does after one turn."""

    # The value to persist as agent_instances.consecutive_blocked_turns.
    consecutive_blocked: int
    # Close the instance (status Closed, no heartbeat) and raise a "stuck" request.
    close: bool


def after_turn(
    *,
    blocked: bool,
    consecutive_blocked: int,
    max_blocked: int,
    enforce: bool,
    planned: bool = True,
) -> StuckVerdict:
    """The blocked-turn counter after a turn, and whether the agent must be closed
    (`planned`: the tick made a model call; otherwise the counter is unchanged)."""
    if not planned:
        return StuckVerdict(consecutive_blocked=consecutive_blocked, close=False)
    counter = consecutive_blocked + 1 if blocked else 0
    return StuckVerdict(consecutive_blocked=counter, close=enforce and counter >= max_blocked)
