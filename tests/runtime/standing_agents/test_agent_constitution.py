"""Constitution rules as data, and the validation of the standing agents' config keys."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.settings import Settings
from runtime.standing_agents.configs import (
    KNOWN_KEYS,
    UnknownConfigKey,
    effective_credit,
    validate_config,
)
from runtime.standing_agents.constitution import ConstitutionRule, parse_rules, violations

RULES: list[dict[str, Any]] = [
    {"id": "no-drop", "pattern": r"(?i)drop\s+table", "tools": ["soa_propose_task"]},
    {
        "id": "no-secrets",
        "pattern": r"sk-[A-Za-z0-9]{8}",
        "tools": ["soa_send_message", "soa_propose_task"],
    },
    {"id": "no-prod-key", "pattern": r'"environment":"prod"', "tools": ["soa_propose_task"]},
]


def test_parse_rules_keeps_order_and_fields() -> None:
    rules = parse_rules(RULES)
    assert [rule.id for rule in rules] == ["no-drop", "no-secrets", "no-prod-key"]
    assert rules[1] == ConstitutionRule(
        id="no-secrets",
        pattern=r"sk-[A-Za-z0-9]{8}",
        tools=["soa_send_message", "soa_propose_task"],
    )
    assert parse_rules(None) == [] and parse_rules([]) == []


def _rule(**fields: Any) -> dict[str, Any]:
    return {"id": "a", "pattern": "x", "tools": ["t"], **fields}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"id": "x"}, "must be a list"),
        (["x"], r"constitution.rules\[0\] must be an object"),
        ([{"pattern": "a", "tools": ["t"]}], r"\[0\]\.id must be a non-empty string"),
        ([_rule(id=" ")], r"\[0\]\.id must be a non-empty"),
        ([_rule(), _rule(pattern="y")], r"\[1\]\.id 'a' is used by more than one rule"),
        ([_rule(pattern="(")], r"\[0\]\.pattern is not a valid regular expression"),
        ([_rule(pattern="")], r"\[0\]\.pattern must be a non-empty"),
        ([_rule(pattern=3)], r"\[0\]\.pattern must be a non-empty"),
        ([_rule(tools=[])], r"\[0\]\.tools must be a non-empty list"),
        ([_rule(tools="t")], r"\[0\]\.tools must be a non-empty list"),
        ([_rule(tools=["t", 1])], r"\[0\]\.tools must be a non-empty list"),
        ([_rule(x=1)], r"unknown field\(s\): x"),
    ],
)
def test_parse_rules_refuses(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rules(value)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("soa_propose_task", {"title": "Tidy", "body": "rename a column"}, []),
        ("soa_propose_task", {"title": "Cleanup", "body": "then DROP  TABLE users"}, ["no-drop"]),
        # the canonical JSON is searched (keys and structure) ...
        ("soa_propose_task", {"target": {"environment": "prod"}}, ["no-prod-key"]),
        # ... and each string value unescaped, nested in lists and objects too
        ("soa_propose_task", {"steps": [{"sql": "drop table\nx"}]}, ["no-drop"]),
        # several rules: their ids in rule order
        (
            "soa_propose_task",
            {"environment": "prod", "note": "key sk-ABCDEFGH", "sql": "drop table t"},
            ["no-drop", "no-secrets", "no-prod-key"],
        ),
        # a rule only covers its own tools
        ("soa_send_message", {"text": "drop table t; sk-ABCDEFGH"}, ["no-secrets"]),
        ("search_memory", {"query": "drop table"}, []),
    ],
)
def test_violations(tool: str, arguments: dict[str, Any], expected: list[str]) -> None:
    assert violations(parse_rules(RULES), tool, arguments) == expected


def test_string_values_are_matched_unescaped() -> None:
    """A pattern spanning a newline or a quote sees the text, not its JSON escaping."""
    rules = parse_rules([{"id": "q", "pattern": r'say "rm -rf"\n', "tools": ["t"]}])
    assert violations(rules, "t", {"text": 'say "rm -rf"\nnow'}) == ["q"]
    assert violations(rules, "t", {"text": "say rm -rf now"}) == []


# --- config validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "stored"),
    [
        ("AgentDispatcher:TickMaxTokens", 20_000, 20_000),
        ("AgentDispatcher:TickMaxTokens", 20_000.0, 20_000),
        ("AgentDispatcher:TickMaxToolCalls", 4, 4),
        ("AgentDispatcher:TickMaxTurns", 12, 12),
        ("AgentDispatcher:TickMaxSeconds", 90, 90.0),
        ("AgentDispatcher:TickMaxSeconds", 0.5, 0.5),
        ("AgentDispatcher:TickMaxCostUsd", 2.5, 2.5),
        ("AgentDispatcher:TickMaxCostUsd", None, None),  # null clears
        ("AgentDispatcher:WeeklyCreditUsd", 0, 0.0),
        ("AgentDispatcher:WeeklyCreditUsd", 120, 120.0),
        ("CreditEnforcementEnabled", False, False),
        ("CreditEnforcementEnabled", None, None),
        ("constitution.rules", RULES, RULES),
        ("constitution.rules", [], []),
        ("constitution.rules", None, None),
    ],
)
def test_validate_config_accepts(key: str, value: Any, stored: Any) -> None:
    result = validate_config(key, value)
    assert result == stored and type(result) is type(stored)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("AgentDispatcher:TickMaxTokens", 0, "whole number from 1 to"),
        ("AgentDispatcher:TickMaxTokens", -5, "whole number from 1 to"),
        ("AgentDispatcher:TickMaxTokens", 1.5, "whole number from 1 to"),
        ("AgentDispatcher:TickMaxToolCalls", True, "whole number from 1 to"),
        ("AgentDispatcher:TickMaxTurns", "8", "whole number from 1 to"),
        ("AgentDispatcher:TickMaxSeconds", 0, "number > 0"),
        ("AgentDispatcher:TickMaxCostUsd", float("inf"), "number > 0"),
        ("AgentDispatcher:TickMaxCostUsd", "1.00", "number > 0"),
        ("AgentDispatcher:WeeklyCreditUsd", -1, "from 0 to"),
        ("AgentDispatcher:TickMaxTokens", 10_000_001, "whole number from 1 to"),
        ("CreditEnforcementEnabled", "yes", "true, false or null"),
        ("CreditEnforcementEnabled", 1, "true, false or null"),
    ],
)
def test_validate_config_refuses(key: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        validate_config(key, value)
    assert str(caught.value).startswith(key)


def test_validate_config_refuses_bad_rules() -> None:
    with pytest.raises(ValueError, match=r"constitution\.rules\[0\]\.pattern is not a valid"):
        validate_config("constitution.rules", [_rule(pattern="(")])


def test_unknown_key() -> None:
    with pytest.raises(UnknownConfigKey) as caught:
        validate_config("AgentDispatcher:TickMaxTokenz", 5)
    assert isinstance(caught.value, KeyError)
    assert caught.value.key == "AgentDispatcher:TickMaxTokenz"
    assert "unknown config key 'AgentDispatcher:TickMaxTokenz'" in str(caught.value)
    # The tick axes, the credit, the constitution, and the foundational cap and window.
    assert len(KNOWN_KEYS) == 12


@pytest.mark.parametrize(
    ("configs", "enabled", "cap"),
    [
        ({}, True, 60.0),
        ({"CreditEnforcementEnabled": False}, False, 60.0),
        ({"AgentDispatcher:WeeklyCreditUsd": 10}, True, 10.0),
        ({"AgentDispatcher:WeeklyCreditUsd": None, "CreditEnforcementEnabled": None}, True, 60.0),
        ({"AgentDispatcher:WeeklyCreditUsd": "x", "CreditEnforcementEnabled": "no"}, True, 60.0),
    ],
)
def test_effective_credit(configs: dict[str, Any], enabled: bool, cap: float) -> None:
    credit = effective_credit(configs, Settings())
    assert (credit.enabled, credit.weekly_cap_usd) == (enabled, cap)


def test_effective_credit_falls_back_to_settings() -> None:
    settings = Settings(agent_weekly_credit_usd=25, credit_enforcement_enabled=False)
    credit = effective_credit({}, settings)
    assert (credit.enabled, credit.weekly_cap_usd) == (False, 25.0)
