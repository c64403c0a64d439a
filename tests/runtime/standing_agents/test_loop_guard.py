"""The loop guards' rules, pure (runtime/standing_agents/loop_guard.py)."""

from __future__ import annotations

from typing import Any

from runtime.standing_agents.loop_guard import (
    REPEATED_DECISION,
    SELF_WAKE,
    LoopVerdict,
    after_planned_turn,
    decision_hash,
)


def _hash(arguments: dict[str, object], summary: str = "done") -> str:
    return decision_hash(
        decision_kind="Acted",
        actions=[{"tool": "soa_send_message", "arguments": arguments, "outcome": "ok"}],
        wait_condition="next_event",
        reasoning_summary=summary,
    )


def test_the_decision_hash_is_canonical_and_sees_arguments_and_summary() -> None:
    assert _hash({"a": 1, "b": 2}) == _hash({"b": 2, "a": 1})
    assert _hash({"a": 1}) != _hash({"a": 2})
    assert _hash({"a": 1}, "done") != _hash({"a": 1}, "other")
    assert len(_hash({})) == 64


def _turn(**overrides: Any) -> LoopVerdict:
    values: dict[str, Any] = {
        "planned": True,
        "this_hash": "h",
        "last_hash": "h",
        "repeated": 3,
        "max_repeated": 5,
        "self_wakes_in_window": 0,
        "max_self_wakes": 12,
    }
    values.update(overrides)
    return after_planned_turn(**values)


def test_the_same_decision_counts_up_and_fires_at_the_limit() -> None:
    assert _turn().repeated_decisions == 4 and _turn().rule is None
    fired = _turn(repeated=4)
    assert fired.rule == REPEATED_DECISION
    other = _turn(this_hash="g")
    assert (other.repeated_decisions, other.last_decision_hash) == (1, "g")


def test_a_turn_without_a_model_call_leaves_the_counters() -> None:
    idle = _turn(planned=False, repeated=4, this_hash="g", self_wakes_in_window=99)
    assert (idle.repeated_decisions, idle.last_decision_hash, idle.rule) == (4, "h", None)


def test_more_self_wakes_than_allowed_fire() -> None:
    assert _turn(self_wakes_in_window=12).rule is None
    assert _turn(self_wakes_in_window=13).rule == SELF_WAKE
