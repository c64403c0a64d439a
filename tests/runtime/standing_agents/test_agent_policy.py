"""The standing agents' pure policy, each spec table a parametrized test (spec §3.3-§3.6)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from runtime.settings import Settings
from runtime.standing_agents.cadence import next_heartbeat_delay_ms
from runtime.standing_agents.catalog import RESEARCH_BUDGET
from runtime.standing_agents.configs import validate_config
from runtime.standing_agents.contracts import DecisionKind, EventKind, TickBudget
from runtime.standing_agents.decision_mapper import map_decision
from runtime.standing_agents.plan_hash import forced_replan_due, is_idle_tick, plan_input_hash
from runtime.standing_agents.stuck_guard import after_turn
from runtime.standing_agents.tick_budget import (
    CODE_DEFAULT_BUDGET,
    CONFIG_KEYS,
    CREDIT_WINDOW,
    FOUNDATIONAL_MAX_OUTPUT_TOKENS,
    FOUNDATIONAL_OUTPUT_KEY,
    FOUNDATIONAL_WINDOW,
    FOUNDATIONAL_WINDOW_KEY,
    BudgetUsage,
    credit_allows,
    credit_window_start,
    exhausted_axis,
    foundational_active,
    foundational_deadline,
    foundational_output_tokens,
    foundational_window,
    resolve_tick_budget,
    settings_budget,
)

HOUR_MS = 3_600_000
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _delay(enabled: bool, prior_idle: int) -> int:
    settings = Settings()
    return next_heartbeat_delay_ms(
        idle_heartbeat_enabled=enabled,
        heartbeat_ms=settings.agent_heartbeat_ms,
        backoff_base_ms=settings.agent_backoff_base_ms,
        backoff_factor=settings.agent_backoff_factor,
        max_backoff_ms=settings.agent_max_backoff_ms,
        prior_idle_ticks=prior_idle,
    )


# --- §3.3 cadence -------------------------------------------------------------------------


@pytest.mark.parametrize("prior_idle", [0, 1, 5, 50, 10_000])
def test_idle_heartbeat_enabled_is_a_fixed_24h(prior_idle: int) -> None:
    assert _delay(True, prior_idle) == 24 * HOUR_MS


@pytest.mark.parametrize(
    ("prior_idle", "delay_ms"),
    [
        (0, 30_000),
        (1, 60_000),
        (2, 120_000),
        (3, 240_000),
        (4, 480_000),
        (5, 960_000),
        (6, 1_800_000),  # 1,920,000 capped at 30 min
        (7, 1_800_000),
        (100_000, 1_800_000),  # no float overflow on a very long idle streak
        (-1, 30_000),
    ],
)
def test_backoff_is_geometric_and_capped_at_30_min(prior_idle: int, delay_ms: int) -> None:
    assert _delay(False, prior_idle) == delay_ms


def test_backoff_factor_one_is_a_flat_base() -> None:
    delay = next_heartbeat_delay_ms(
        idle_heartbeat_enabled=False,
        heartbeat_ms=1,
        backoff_base_ms=5_000,
        backoff_factor=1.0,
        max_backoff_ms=60_000,
        prior_idle_ticks=1_000,
    )
    assert delay == 5_000


# --- §3.4.4 plan input hash, idle ticks, forced replan ---------------------------------------

PAYLOAD = {"signalKind": "NewCouple", "detail": {"a": 1, "b": [1, 2]}, "text": "élan"}


def test_plan_hash_is_sha256_hex_and_stable_under_key_order() -> None:
    reordered = {"text": "élan", "detail": {"b": [1, 2], "a": 1}, "signalKind": "NewCouple"}
    first = plan_input_hash("ExternalSignalReceived", PAYLOAD, "ok")
    assert first == plan_input_hash("ExternalSignalReceived", reordered, "ok")
    assert len(first) == 64 and int(first, 16) >= 0


@pytest.mark.parametrize(
    ("kind", "payload", "bucket"),
    [
        ("AgentTick", PAYLOAD, "ok"),  # kind
        ("ExternalSignalReceived", {**PAYLOAD, "text": "other"}, "ok"),  # payload value
        ("ExternalSignalReceived", {**PAYLOAD, "extra": None}, "ok"),  # payload key
        ("ExternalSignalReceived", {"detail": {"a": 1, "b": [2, 1]}}, "ok"),  # list order
        ("ExternalSignalReceived", PAYLOAD, "incident"),  # ops bucket
    ],
)
def test_plan_hash_changes_on_kind_payload_or_bucket(
    kind: str, payload: dict[str, Any], bucket: str
) -> None:
    assert plan_input_hash(kind, payload, bucket) != plan_input_hash(
        "ExternalSignalReceived", PAYLOAD, "ok"
    )


def test_plan_hash_takes_nothing_else() -> None:
    """Only three inputs exist: event ids, timestamps and the reasoning tail cannot leak in."""
    assert plan_input_hash(EventKind.AGENT_TICK, {}, "ok") == plan_input_hash("AgentTick", {}, "ok")


@pytest.mark.parametrize(
    ("kind", "current", "previous", "idle"),
    [
        ("AgentTick", "h1", "h1", True),
        ("AgentTick", "h1", "h0", False),
        ("AgentTick", "h1", None, False),  # the first tick
        ("OperatorMessage", "h1", "h1", False),  # only heartbeats are idle
        ("AgentInitialized", "h1", "h1", False),
        ("ExternalSignalReceived", "h1", "h1", False),
    ],
)
def test_idle_tick(kind: str, current: str, previous: str | None, idle: bool) -> None:
    assert is_idle_tick(kind, current, previous) is idle


def test_twenty_idle_ticks_then_the_twenty_first_plans() -> None:
    every_n = Settings().forced_replan_every_n_idle_ticks
    assert every_n == 20
    due = [forced_replan_due(idle, every_n) for idle in range(25)]
    assert due == [False] * 20 + [True] * 5


# --- §3.6 tick budget -----------------------------------------------------------------------


def test_code_default_and_settings_layer() -> None:
    assert settings_budget(Settings()) == CODE_DEFAULT_BUDGET
    assert CODE_DEFAULT_BUDGET == TickBudget(
        max_tokens=16_000,
        max_tool_calls=8,
        max_seconds=180,
        max_cost_usd=1.0,
        max_turns=8,
        max_output_tokens_per_turn=8_192,
    )
    layered = settings_budget(Settings(agent_tick_max_tokens=9_000, agent_tick_max_seconds=30))
    assert layered == CODE_DEFAULT_BUDGET.model_copy(
        update={"max_tokens": 9_000, "max_seconds": 30}
    )


@pytest.mark.parametrize(
    ("key", "axis", "config_value", "settings_field", "settings_value"),
    [
        ("AgentDispatcher:TickMaxTokens", "max_tokens", 20_000, "agent_tick_max_tokens", 12_000),
        ("AgentDispatcher:TickMaxToolCalls", "max_tool_calls", 3, "agent_tick_max_tool_calls", 5),
        ("AgentDispatcher:TickMaxSeconds", "max_seconds", 45.5, "agent_tick_max_seconds", 60),
        ("AgentDispatcher:TickMaxCostUsd", "max_cost_usd", 0.25, "agent_tick_max_cost_usd", 2.0),
        ("AgentDispatcher:TickMaxTurns", "max_turns", 2, "agent_tick_max_turns", 4),
    ],
)
def test_configs_beat_settings_beat_code(
    key: str, axis: str, config_value: float, settings_field: str, settings_value: float
) -> None:
    layer = settings_budget(Settings().model_copy(update={settings_field: settings_value}))

    def resolve(configs: dict[str, Any]) -> Any:
        budget = resolve_tick_budget(
            configs=configs, settings_layer=layer, mode_override=None, foundational=False
        )
        return getattr(budget, axis)

    assert resolve({key: config_value}) == config_value
    assert resolve({}) == settings_value
    assert resolve({key: None}) == settings_value  # a cleared key falls back
    assert resolve({key: "lots"}) == settings_value  # a malformed row never breaks a tick
    code = resolve_tick_budget(
        configs={},
        settings_layer=settings_budget(Settings()),
        mode_override=None,
        foundational=False,
    )
    assert getattr(code, axis) == getattr(CODE_DEFAULT_BUDGET, axis)


def test_config_keys_are_the_spec_names() -> None:
    assert set(CONFIG_KEYS) == {
        "AgentDispatcher:TickMaxTokens",
        "AgentDispatcher:TickMaxToolCalls",
        "AgentDispatcher:TickMaxSeconds",
        "AgentDispatcher:TickMaxCostUsd",
        "AgentDispatcher:TickMaxTurns",
        "AgentDispatcher:TickMaxOutputTokensPerTurn",
    }
    assert FOUNDATIONAL_OUTPUT_KEY == "AgentDispatcher:FoundationalMaxOutputTokensPerTurn"


def test_foundational_phase_is_unlimited_with_16384_output_tokens() -> None:
    budget = resolve_tick_budget(
        configs={"AgentDispatcher:TickMaxTokens": 100},
        settings_layer=CODE_DEFAULT_BUDGET,
        mode_override=RESEARCH_BUDGET,
        foundational=True,
    )
    assert budget == TickBudget(max_output_tokens_per_turn=16_384)
    assert FOUNDATIONAL_MAX_OUTPUT_TOKENS == 16_384
    assert exhausted_axis(budget, BudgetUsage(tokens=10**9, tool_calls=10**6, turns=10**6)) is None


@pytest.mark.parametrize(
    ("is_building", "deadline", "active"),
    [
        (True, NOW + timedelta(hours=1), True),
        (True, NOW, False),  # the deadline itself ends the phase
        (True, NOW - timedelta(seconds=1), False),  # passed: the normal budget applies
        (False, NOW + timedelta(hours=1), False),  # agent_workset_complete was called
        (True, None, False),  # no bound, no unlimited budget
        (True, (NOW + timedelta(hours=1)).replace(tzinfo=None), True),  # naive = UTC
    ],
)
def test_foundational_active(is_building: bool, deadline: datetime | None, active: bool) -> None:
    assert foundational_active(is_building, deadline, NOW) is active


def test_foundational_deadline_defaults_to_24h() -> None:
    assert FOUNDATIONAL_WINDOW == timedelta(hours=24)
    deadline = foundational_deadline(NOW)
    assert foundational_active(True, deadline, NOW + timedelta(hours=23, minutes=59))
    assert not foundational_active(True, deadline, NOW + timedelta(hours=24))


def test_deadline_passed_gives_the_normal_budget() -> None:
    foundational = foundational_active(True, NOW - timedelta(minutes=1), NOW)
    budget = resolve_tick_budget(
        configs={},
        settings_layer=CODE_DEFAULT_BUDGET,
        mode_override=None,
        foundational=foundational,
    )
    assert budget == CODE_DEFAULT_BUDGET


def test_research_mode_override_widens_only_that_mode() -> None:
    configs = {"AgentDispatcher:TickMaxTurns": 6}
    research = resolve_tick_budget(
        configs=configs,
        settings_layer=CODE_DEFAULT_BUDGET,
        mode_override=RESEARCH_BUDGET,
        foundational=False,
    )
    assert research == TickBudget(
        max_tokens=48_000,
        max_tool_calls=24,
        max_seconds=600,
        max_cost_usd=4.0,
        max_turns=24,
        max_output_tokens_per_turn=16_384,
    )
    for axis in ("max_tokens", "max_tool_calls", "max_seconds", "max_cost_usd", "max_turns"):
        assert getattr(research, axis) > getattr(CODE_DEFAULT_BUDGET, axis)
    cadence = resolve_tick_budget(
        configs=configs,
        settings_layer=CODE_DEFAULT_BUDGET,
        mode_override=None,
        foundational=False,
    )
    assert cadence == CODE_DEFAULT_BUDGET.model_copy(update={"max_turns": 6})
    assert CODE_DEFAULT_BUDGET.max_tokens == 16_000  # the shared default is untouched


def test_partial_mode_override_keeps_the_policy_default_elsewhere() -> None:
    budget = resolve_tick_budget(
        configs={"AgentDispatcher:TickMaxCostUsd": 0.5},
        settings_layer=CODE_DEFAULT_BUDGET,
        mode_override=TickBudget(max_tool_calls=2),
        foundational=False,
    )
    assert budget == CODE_DEFAULT_BUDGET.model_copy(
        update={"max_tool_calls": 2, "max_cost_usd": 0.5}
    )


@pytest.mark.parametrize(
    ("usage", "axis"),
    [
        (BudgetUsage(), None),
        (BudgetUsage(tokens=15_999, tool_calls=7, seconds=179.9, cost_usd=0.99, turns=7), None),
        (BudgetUsage(tokens=16_000), "tokens"),
        (BudgetUsage(tool_calls=8), "tool_calls"),
        (BudgetUsage(seconds=180.0), "seconds"),
        (BudgetUsage(cost_usd=1.5), "cost_usd"),
        (BudgetUsage(turns=8), "turns"),
        (BudgetUsage(tokens=20_000, turns=9), "tokens"),  # first axis in order
    ],
)
def test_exhausted_axis(usage: BudgetUsage, axis: str | None) -> None:
    assert exhausted_axis(CODE_DEFAULT_BUDGET, usage) == axis


def test_unlimited_axis_never_exhausts() -> None:
    budget = CODE_DEFAULT_BUDGET.model_copy(update={"max_turns": None})
    assert exhausted_axis(budget, BudgetUsage(turns=10**6)) is None


# --- §3.4.9 credit gate ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enabled", "cap", "spent", "allows"),
    [
        (True, 60.0, 0.0, True),
        (True, 60.0, 59.99, True),
        (True, 60.0, 60.0, False),
        (True, 60.0, 75.0, False),
        (False, 60.0, 75.0, True),  # enforcement off: measured, never gated
        (True, 0.0, 0.0, False),  # a zero credit stops planning
    ],
)
def test_credit_gate(enabled: bool, cap: float, spent: float, allows: bool) -> None:
    assert credit_allows(enabled=enabled, weekly_cap_usd=cap, spent_in_window_usd=spent) is allows


def test_credit_window_is_a_rolling_seven_days() -> None:
    assert CREDIT_WINDOW == timedelta(days=7)
    assert credit_window_start(NOW) == NOW - timedelta(days=7)
    assert Settings().agent_weekly_credit_usd == 60.0


# --- §3.4.11 decision mapping ---------------------------------------------------------------

E = EventKind
D = DecisionKind


@pytest.mark.parametrize(
    ("event", "flags", "decision"),
    [
        # escalation wins over everything
        (E.AGENT_TICK, "llm esc act done", D.ESCALATED),
        (E.OPERATOR_MESSAGE, "llm esc blocked", D.ESCALATED),
        # then a side-effect tool
        (E.AGENT_TICK, "llm act done", D.ACTED_WITH_TOOL),
        (E.AGENT_INITIALIZED, "llm act done", D.ACTED_WITH_TOOL),
        (E.OPERATOR_MESSAGE, "llm act blocked", D.ACTED_WITH_TOOL),
        # then a clean completion, by event
        (E.AGENT_INITIALIZED, "llm done", D.INITIALIZED),
        (E.OPERATOR_MESSAGE, "llm done", D.MESSAGE_ACKNOWLEDGED),
        (E.OPERATOR_ANSWERED_ESCALATION, "llm done", D.ESCALATION_RESUMED),
        (E.AGENT_TICK, "llm done", D.PLANNED),
        (E.MISSION_STATE_CHANGED, "llm done", D.PLANNED),
        (E.DECISION_RESOLVED, "llm done", D.PLANNED),
        (E.DEPENDENCY_COMPLETED, "llm done", D.PLANNED),
        (E.EXTERNAL_SIGNAL_RECEIVED, "llm done", D.PLANNED),
        # an idle tick that skipped the model
        (E.AGENT_TICK, "", D.HEARTBEAT),
        # blocked or never completed
        (E.AGENT_TICK, "llm blocked", D.WAITING_FOR_EVENT),
        (E.OPERATOR_MESSAGE, "llm done blocked", D.WAITING_FOR_EVENT),
        (E.AGENT_TICK, "llm", D.WAITING_FOR_EVENT),
        (E.AGENT_TICK, "blocked", D.WAITING_FOR_EVENT),
    ],
)
def test_decision_mapping(event: EventKind, flags: str, decision: DecisionKind) -> None:
    words = set(flags.split())
    assert (
        map_decision(
            event,
            llm_called="llm" in words,
            escalated="esc" in words,
            acted_with_tool="act" in words,
            completed="done" in words,
            blocked="blocked" in words,
        )
        is decision
    )


# --- §3.3.4 STUCK guard ---------------------------------------------------------------------


def test_stuck_guard_closes_at_the_third_blocked_turn() -> None:
    max_blocked = Settings().max_consecutive_blocked_turns
    assert max_blocked == 3
    counter, closes = 0, []
    for _ in range(3):
        verdict = after_turn(blocked=True, consecutive_blocked=counter, max_blocked=3, enforce=True)
        counter = verdict.consecutive_blocked
        closes.append(verdict.close)
    assert closes == [False, False, True] and counter == 3


@pytest.mark.parametrize(
    ("blocked", "before", "enforce", "after", "close"),
    [
        (False, 2, True, 0, False),  # anything else resets
        (True, 0, True, 1, False),
        (True, 2, True, 3, True),
        (True, 5, True, 6, True),
        (True, 2, False, 3, False),  # not enforced: counted, never closed
    ],
)
def test_stuck_guard(blocked: bool, before: int, enforce: bool, after: int, close: bool) -> None:
    verdict = after_turn(
        blocked=blocked, consecutive_blocked=before, max_blocked=3, enforce=enforce
    )
    assert (verdict.consecutive_blocked, verdict.close) == (after, close)


def test_a_tick_without_a_model_call_leaves_the_blocked_count() -> None:
    """Idle heartbeats (no model call) between blocked turns do not reset the count: the
    third blocked turn of the planner still closes the agent."""
    counter, closes = 0, []
    for blocked, planned in [(True, True), (False, False), (True, True), (False, False)]:
        verdict = after_turn(
            blocked=blocked,
            consecutive_blocked=counter,
            max_blocked=3,
            enforce=True,
            planned=planned,
        )
        counter = verdict.consecutive_blocked
        closes.append(verdict.close)
    assert counter == 2 and not any(closes)
    last = after_turn(blocked=True, consecutive_blocked=counter, max_blocked=3, enforce=True)
    assert last.close


def test_a_normal_tick_caps_each_turns_output_and_the_cap_is_configurable() -> None:
    key = "AgentDispatcher:TickMaxOutputTokensPerTurn"
    base = settings_budget(Settings())
    code = resolve_tick_budget(
        configs={}, settings_layer=base, mode_override=None, foundational=False
    )
    assert code.max_output_tokens_per_turn == 8_192
    layer = settings_budget(Settings(agent_tick_max_output_tokens_per_turn=2_000))
    assert (
        resolve_tick_budget(
            configs={key: 1_000}, settings_layer=layer, mode_override=None, foundational=False
        ).max_output_tokens_per_turn
        == 1_000
    )
    assert (
        resolve_tick_budget(
            configs={}, settings_layer=layer, mode_override=None, foundational=False
        ).max_output_tokens_per_turn
        == 2_000
    )
    assert validate_config(key, 8_192) == 8_192
    with pytest.raises(ValueError):
        validate_config(key, 0.5)


def test_the_foundational_cap_and_window_are_configurable() -> None:
    configs = {FOUNDATIONAL_OUTPUT_KEY: 32_000, FOUNDATIONAL_WINDOW_KEY: 48}
    assert foundational_output_tokens(configs, 16_384) == 32_000
    assert foundational_output_tokens({}, 20_000) == 20_000
    budget = resolve_tick_budget(
        configs=configs,
        settings_layer=CODE_DEFAULT_BUDGET,
        mode_override=None,
        foundational=True,
        foundational_output_cap=foundational_output_tokens(configs, 16_384),
    )
    assert budget == TickBudget(max_output_tokens_per_turn=32_000)
    assert foundational_window(configs, 86_400_000) == timedelta(hours=48)
    assert foundational_window({}, 3_600_000) == timedelta(hours=1)
    assert validate_config(FOUNDATIONAL_WINDOW_KEY, 12) == 12.0
    assert validate_config(FOUNDATIONAL_OUTPUT_KEY, 20_000) == 20_000
    for key, bad in ((FOUNDATIONAL_WINDOW_KEY, 0), (FOUNDATIONAL_OUTPUT_KEY, 1.5)):
        with pytest.raises(ValueError):
            validate_config(key, bad)


def test_an_integer_too_large_for_a_float_is_a_refusal_not_a_crash() -> None:
    with pytest.raises(ValueError):
        validate_config("AgentDispatcher:TickMaxTokens", 10**400)
