"""The live configuration keys of standing agents (`system_configs`): validation, rows.

`validate_config` is what the config route runs before a write: it returns the value to
store (normalised) or raises `UnknownConfigKey` or `ValueError` (a message fit for a 400
body); `put_config`, the write, refuses them as `ConfigKeyNotFound` (404) and
`InvalidConfigValue` (400). Reading goes through `effective_credit` and
`runtime.standing_agents.tick_budget.resolve_tick_budget`, which fall back below a cleared key.

| key                                  | value                                          |
|--------------------------------------|------------------------------------------------|
| AgentDispatcher:TickMaxTokens        | integer in 1..10,000,000, or null to clear     |
| AgentDispatcher:TickMaxToolCalls     | integer in 1..10,000, or null to clear         |
| AgentDispatcher:TickMaxSeconds       | number in (0, 86,400], or null to clear        |
| AgentDispatcher:TickMaxCostUsd       | number in (0, 100,000], or null to clear       |
| AgentDispatcher:TickMaxTurns         | integer in 1..10,000, or null to clear         |
| AgentDispatcher:TickMaxOutputTokensPerTurn | integer in 1..1,000,000, or null to clear |
| AgentDispatcher:FoundationalMaxOutputTokensPerTurn | integer in 1..1,000,000, or null |
| AgentDispatcher:FoundationalWindowHours | number of hours in (0, 8,760], or null      |
| AgentDispatcher:WeeklyCreditUsd      | number in [0, 1,000,000], or null to clear     |
| CreditEnforcementEnabled             | boolean, or null to clear                      |
| constitution.rules                   | [{"id", "pattern", "tools"}] (see constitution)|
| compliance.projects                  | [{"id", "name"?, "paths"?}] (compliance_corpus) |
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal, TypeGuard

from sqlmodel import col, select

from runtime.failures import WireError
from runtime.standing_agents.compliance_corpus import PROJECTS_KEY, parse_projects
from runtime.standing_agents.constitution import CONSTITUTION_KEY, parse_rules
from runtime.standing_agents.models import SystemConfig
from runtime.standing_agents.tick_budget import (
    CONFIG_KEYS,
    FOUNDATIONAL_OUTPUT_KEY,
    FOUNDATIONAL_WINDOW_KEY,
    INTEGER_AXES,
    CreditSettings,
    config_axis_value,
    foundational_output_tokens,
    foundational_window,
    settings_budget,
)
from runtime.store.atomic import upsert
from runtime.store.engine import Store

if TYPE_CHECKING:
    from runtime.settings import Settings

WEEKLY_CREDIT_KEY: Final = "AgentDispatcher:WeeklyCreditUsd"
CREDIT_ENFORCEMENT_KEY: Final = "CreditEnforcementEnabled"

# Upper bounds: a value past them is a typo (or a unit slip), not a budget.
AXIS_MAX: Final[dict[str, int | float]] = {
    "max_tokens": 10_000_000,
    "max_tool_calls": 10_000,
    "max_turns": 10_000,
    "max_seconds": 86_400,
    "max_cost_usd": 100_000,
    "max_output_tokens_per_turn": 1_000_000,
}
FOUNDATIONAL_WINDOW_MAX_HOURS: Final = 8_760  # a year
WEEKLY_CREDIT_MAX: Final = 1_000_000

KNOWN_KEYS: Final[frozenset[str]] = frozenset(
    {
        *CONFIG_KEYS,
        WEEKLY_CREDIT_KEY,
        CREDIT_ENFORCEMENT_KEY,
        CONSTITUTION_KEY,
        PROJECTS_KEY,
        FOUNDATIONAL_OUTPUT_KEY,
        FOUNDATIONAL_WINDOW_KEY,
    }
)


class UnknownConfigKey(KeyError):
    """A key no standing-agent component reads (a typo would otherwise be silently stored)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return f"unknown config key {self.key!r}; known keys: {', '.join(sorted(KNOWN_KEYS))}"


class ConfigKeyNotFound(WireError):
    """A config route naming a key no component reads: 404, with the keys that exist."""

    kind: Literal["unknown_config_key"] = "unknown_config_key"
    key: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Unknown config key "{self.key}"',
            "code": "unknown_config_key",
            "allowed": sorted(KNOWN_KEYS),
        }


class InvalidConfigValue(WireError):
    """A value that does not fit its key; `message` names the key and the rule: 400."""

    kind: Literal["invalid_config_value"] = "invalid_config_value"
    key: str
    message: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": "invalid_config_value", "key": self.key}


def _is_number(value: Any) -> TypeGuard[int | float]:
    # bool is an int subclass, and `true` is not a budget; NaN and infinity are not limits,
    # nor an integer too large for a float (math.isfinite raises on it: a 400, not a 500).
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def validate_config(key: str, value: Any) -> Any:
    """The value to store under `key`, validated and normalised.

    Raises:
        UnknownConfigKey: `key` is not in KNOWN_KEYS.
        ValueError: the value does not fit the key (the message names the key and the rule).
    """
    if key not in KNOWN_KEYS:
        raise UnknownConfigKey(key)
    if key == CONSTITUTION_KEY:
        rules = parse_rules(value)
        return None if value is None else [rule.model_dump() for rule in rules]
    if key == PROJECTS_KEY:
        projects = parse_projects(value)
        return None if value is None else [p.model_dump(exclude_none=True) for p in projects]
    if value is None:
        return None
    if key == CREDIT_ENFORCEMENT_KEY:
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true, false or null")
        return value
    if key == FOUNDATIONAL_OUTPUT_KEY:
        top = AXIS_MAX["max_output_tokens_per_turn"]
        if not (_is_number(value) and float(value).is_integer() and 0 < value <= top):
            raise ValueError(f"{key} must be a whole number from 1 to {top:,}, or null")
        return int(value)
    if key == FOUNDATIONAL_WINDOW_KEY:
        if not _is_number(value) or not 0 < value <= FOUNDATIONAL_WINDOW_MAX_HOURS:
            raise ValueError(
                f"{key} must be a number of hours > 0 and <= {FOUNDATIONAL_WINDOW_MAX_HOURS:,}"
                ", or null"
            )
        return float(value)
    if key == WEEKLY_CREDIT_KEY:
        if not _is_number(value) or not 0 <= value <= WEEKLY_CREDIT_MAX:
            raise ValueError(
                f"{key} must be a number of dollars from 0 to {WEEKLY_CREDIT_MAX:,}, or null"
            )
        return float(value)
    axis = CONFIG_KEYS[key]
    top = AXIS_MAX[axis]
    if axis in INTEGER_AXES:
        whole = _is_number(value) and float(value).is_integer()
        if not whole or not 0 < value <= top:
            raise ValueError(f"{key} must be a whole number from 1 to {top:,}, or null")
        return int(value)
    if not _is_number(value) or not 0 < value <= top:
        raise ValueError(f"{key} must be a number > 0 and <= {top:,}, or null")
    return float(value)


def effective_value(key: str, stored: Any, settings: Settings) -> Any:
    """What a tick uses for `key`: the stored value when usable, else the settings
    layer, else the code default (the same fallbacks as the tick's own resolution)."""
    if key in CONFIG_KEYS:
        axis = CONFIG_KEYS[key]
        usable = config_axis_value(axis, stored)
        return usable if usable is not None else getattr(settings_budget(settings), axis)
    if key == FOUNDATIONAL_OUTPUT_KEY:
        return foundational_output_tokens(
            {key: stored}, settings.agent_foundational_max_output_tokens_per_turn
        )
    if key == FOUNDATIONAL_WINDOW_KEY:
        window = foundational_window({key: stored}, settings.agent_foundational_window_ms)
        return window.total_seconds() / 3600
    if key == CONSTITUTION_KEY:
        try:
            return [rule.model_dump() for rule in parse_rules(stored)]
        except ValueError:
            return []  # a malformed hand-edited row: no rules apply (as in a tick)
    if key == PROJECTS_KEY:
        try:
            return [p.model_dump(exclude_none=True) for p in parse_projects(stored)]
        except ValueError:
            return []  # a malformed hand-edited row: discovered instead (as in a tick)
    credit = effective_credit({key: stored}, settings)
    if key == CREDIT_ENFORCEMENT_KEY:
        return credit.enabled
    if key == WEEKLY_CREDIT_KEY:
        return credit.weekly_cap_usd
    raise UnknownConfigKey(key)


def effective_credit(configs: Mapping[str, Any], settings: Settings) -> CreditSettings:
    """The weekly credit gate: system_configs (when set and well-formed) over Settings."""
    enabled = configs.get(CREDIT_ENFORCEMENT_KEY)
    cap = configs.get(WEEKLY_CREDIT_KEY)
    return CreditSettings(
        enabled=enabled if isinstance(enabled, bool) else settings.credit_enforcement_enabled,
        weekly_cap_usd=(
            float(cap) if _is_number(cap) and cap >= 0 else settings.agent_weekly_credit_usd
        ),
    )


# -- the rows of system_configs ---------------------------------------------------------------


def get_config(store: Store, tenant: str, key: str) -> SystemConfig | None:
    with store.session() as db:
        return db.get(SystemConfig, (tenant, key))


def foundational_window_of(store: Store, tenant: str, settings_ms: int) -> timedelta:
    """The tenant's foundational phase: its `FoundationalWindowHours`, else `settings_ms`."""
    values = {key: row.value for key, row in tenant_configs(store, tenant).items()}
    return foundational_window(values, settings_ms)


def tenant_configs(store: Store, tenant: str) -> dict[str, SystemConfig]:
    with store.session() as db:
        rows = db.exec(select(SystemConfig).where(col(SystemConfig.tenant) == tenant)).all()
    return {row.key: row for row in rows}


def put_config(store: Store, tenant: str, key: str, value: Any) -> SystemConfig:
    """Store a validated value (live: the next tick reads it).

    Raises:
        ApplicationError: what `validate_config` refuses, typed: `ConfigKeyNotFound` (404),
            `InvalidConfigValue` (400).
    """
    try:
        valid = validate_config(key, value)
    except UnknownConfigKey:
        raise ConfigKeyNotFound(key=key).application_error() from None
    except ValueError as err:
        raise InvalidConfigValue(key=key, message=str(err)).application_error() from None
    row = SystemConfig(tenant=tenant, key=key, value=valid, updated_at=datetime.now(UTC))
    with store.transaction() as db:
        # An upsert: two concurrent first writes of a key both succeed, the last one wins
        # (runtime.store.atomic).
        upsert(
            db,
            SystemConfig,
            {"tenant": tenant, "key": key, "value": row.value, "updated_at": row.updated_at},
            key=("tenant", "key"),
            update=("value", "updated_at"),
        )
    return row
