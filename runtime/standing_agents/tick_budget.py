"""The per-tick budget of a standing agent and the weekly credit gate (spec §3.6, §3.4.9).

Resolution, first match wins (`resolve_tick_budget`):

1. Foundational phase: while `is_building_starting_workset` and before the workset
   deadline (`foundational_active`), every axis is unlimited (None) and the per-turn
   output cap rises to `AgentDispatcher:FoundationalMaxOutputTokensPerTurn` (16,384 by
   default; a preset overlay's `maxOutputTokens` never lowers it). The deadline is the
   creation (or reset) plus `AgentDispatcher:FoundationalWindowHours` (24 by default).
2. Mode override: the axes a mode's `budget_override` sets replace the policy default for
   that mode only (Compliance Research: 48k tokens / 24 tool calls / 600 s / $4.00 /
   24 turns). An axis the override leaves None keeps the policy default.
3. Policy default, per axis: `system_configs` (`AgentDispatcher:Tick*`, live, read every
   tick) > Settings (`agent_tick_max_*`) > the code default (`CODE_DEFAULT_BUDGET`).

The weekly credit ($60 over a rolling 7-day window) stays in force in every phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel

from runtime.standing_agents.contracts import TickBudget
from runtime.timestamps import aware_utc

if TYPE_CHECKING:
    # Only for the annotation: workflows import this module, and the settings module
    # (pydantic-settings, the environment) has no business in the workflow sandbox.
    from runtime.settings import Settings

CODE_DEFAULT_BUDGET: Final = TickBudget(
    max_tokens=16_000,
    max_tool_calls=8,
    max_seconds=180.0,
    max_cost_usd=1.00,
    max_turns=8,
    # One model turn's output in a normal tick (the foundational phase raises it; the
    # smaller of this and a preset overlay's maxOutputTokens applies).
    max_output_tokens_per_turn=8_192,
)
FOUNDATIONAL_MAX_OUTPUT_TOKENS: Final = 16_384
FOUNDATIONAL_WINDOW: Final = timedelta(hours=24)
# The foundational phase's two settings, in the spec's names (system_configs, live).
FOUNDATIONAL_OUTPUT_KEY: Final = "AgentDispatcher:FoundationalMaxOutputTokensPerTurn"
FOUNDATIONAL_WINDOW_KEY: Final = "AgentDispatcher:FoundationalWindowHours"
CREDIT_WINDOW: Final = timedelta(days=7)

# system_configs key -> TickBudget field, in the spec's names.
CONFIG_KEYS: Final[dict[str, str]] = {
    "AgentDispatcher:TickMaxTokens": "max_tokens",
    "AgentDispatcher:TickMaxToolCalls": "max_tool_calls",
    "AgentDispatcher:TickMaxSeconds": "max_seconds",
    "AgentDispatcher:TickMaxCostUsd": "max_cost_usd",
    "AgentDispatcher:TickMaxTurns": "max_turns",
    "AgentDispatcher:TickMaxOutputTokensPerTurn": "max_output_tokens_per_turn",
}
# The axes whose values are whole numbers (the others are seconds and dollars).
INTEGER_AXES: Final = frozenset(
    {"max_tokens", "max_tool_calls", "max_turns", "max_output_tokens_per_turn"}
)
_AXES: Final = tuple(CONFIG_KEYS.values())

Axis = Literal["tokens", "tool_calls", "seconds", "cost_usd", "turns"]
# What a budget refusal or a budget pause names: the tick's dollar axis, and the weekly
# credit (not an axis of the tick: the tenant's rolling 7 days).
TICK_COST_AXIS: Final = "cost_usd"
CREDIT_AXIS: Final = "weekly_credit"


def settings_budget(settings: Settings) -> TickBudget:
    """The settings layer over the code default: each `agent_tick_max_*` that is set wins."""
    values: dict[str, Any] = CODE_DEFAULT_BUDGET.model_dump()
    for axis in _AXES:
        configured = getattr(settings, f"agent_tick_{axis}")
        if configured is not None:
            values[axis] = configured
    return TickBudget(**values)


def config_axis_value(axis: str, raw: Any) -> int | float | None:
    """A system_configs value usable on `axis`, or None (absent, cleared or malformed).

    The config route validates writes; this re-check keeps a hand-edited row from
    breaking ticks: a malformed value falls back to the layer below instead of raising.
    """
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
        return None
    if axis in INTEGER_AXES:
        return int(raw) if float(raw).is_integer() else None
    return float(raw)


def resolve_tick_budget(
    *,
    configs: Mapping[str, Any],
    settings_layer: TickBudget,
    mode_override: TickBudget | None,
    foundational: bool,
    foundational_output_cap: int = FOUNDATIONAL_MAX_OUTPUT_TOKENS,
) -> TickBudget:
    """The tick's envelope (see the module docstring for the precedence).

    Args:
        configs: the tenant's system_configs (key -> JSON value); unknown keys are ignored.
        settings_layer: `settings_budget(settings)` (Settings over the code default).
        mode_override: the active mode's `budget_override`, if any.
        foundational: `foundational_active(...)` for this tick.
        foundational_output_cap: `foundational_output_tokens(configs, ...)`.
    """
    if foundational:
        return TickBudget(max_output_tokens_per_turn=foundational_output_cap)
    values: dict[str, Any] = settings_layer.model_dump()
    for key, axis in CONFIG_KEYS.items():
        configured = config_axis_value(axis, configs.get(key))
        if configured is not None:
            values[axis] = configured
    if mode_override is not None:
        for axis, value in mode_override.model_dump().items():
            if value is not None:
                values[axis] = value
    return TickBudget(**values)


def foundational_output_tokens(configs: Mapping[str, Any], settings_value: int) -> int:
    """The foundational phase's per-turn output cap: system_configs > Settings."""
    configured = config_axis_value(
        "max_output_tokens_per_turn", configs.get(FOUNDATIONAL_OUTPUT_KEY)
    )
    return int(configured) if configured is not None else settings_value


def foundational_window(configs: Mapping[str, Any], settings_ms: int) -> timedelta:
    """How long the foundational phase lasts: system_configs (hours) > Settings (ms)."""
    raw = configs.get(FOUNDATIONAL_WINDOW_KEY)
    if isinstance(raw, int | float) and not isinstance(raw, bool) and raw > 0:
        return timedelta(hours=float(raw))
    return timedelta(milliseconds=settings_ms)


def foundational_deadline(now: datetime, window: timedelta = FOUNDATIONAL_WINDOW) -> datetime:
    """The end of the foundational phase for an instance created (or reset) at `now`."""
    return now + window


def foundational_active(is_building: bool, deadline: datetime | None, now: datetime) -> bool:
    """True while the agent builds its starting workset and the deadline has not passed.

    A missing deadline counts as passed (fail closed: an unlimited budget needs a bound).
    Naive datetimes are read as UTC, as the store returns them.
    """
    if not is_building or deadline is None:
        return False
    return aware_utc(now) < aware_utc(deadline)


class BudgetUsage(BaseModel):
    """What a tick has consumed so far."""

    tokens: int = 0
    tool_calls: int = 0
    seconds: float = 0
    cost_usd: float = 0
    turns: int = 0


_USAGE_AXES: Final[tuple[tuple[Axis, str], ...]] = (
    ("tokens", "max_tokens"),
    ("tool_calls", "max_tool_calls"),
    ("seconds", "max_seconds"),
    ("cost_usd", "max_cost_usd"),
    ("turns", "max_turns"),
)


def exhausted_axis(budget: TickBudget, usage: BudgetUsage) -> Axis | None:
    """The first axis whose usage reached its cap (in the order tokens, tool_calls, seconds,
    cost_usd, turns), or None while every axis has room. An unlimited axis never exhausts."""
    for name, cap_field in _USAGE_AXES:
        cap = getattr(budget, cap_field)
        if cap is not None and getattr(usage, name) >= cap:
            return name
    return None


class CreditSettings(BaseModel):
    """The effective weekly credit gate of a tenant (see configs.effective_credit)."""

    enabled: bool
    weekly_cap_usd: float


def credit_window_start(now: datetime) -> datetime:
    """The start of the rolling window whose spend counts against the weekly credit."""
    return now - CREDIT_WINDOW


def credit_allows(*, enabled: bool, weekly_cap_usd: float, spent_in_window_usd: float) -> bool:
    """§3.4.9: False (skip the LLM call, stay idle) when enforcement is on and the
    spend of the last 7 days has reached the weekly cap."""
    return not enabled or spent_in_window_usd < weekly_cap_usd
