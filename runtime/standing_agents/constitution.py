"""Constitution rules: data-driven deny rules on the agent's tool calls.

The spec's "constitution-gated" actions: every proposal an agent makes is checked first.

The rules live in `system_configs` under the key `constitution.rules`, as a JSON list:

    [{"id": "no-prod-drop", "pattern": "(?i)drop\\s+table", "tools": ["soa_propose_task"]}]

A rule applies to the tool calls whose name is in its `tools`. Its `pattern` (a Python
regular expression, searched with `re.search`, so it may match anywhere) is tried against:

1. the canonical JSON of the whole arguments object (`sort_keys=True`,
   `separators=(",", ":")`, `ensure_ascii=False`), so a rule can see keys and structure;
2. every string value found anywhere in the arguments (nested objects and lists
   included), unescaped, so a pattern about the text itself needs no JSON escaping.

A rule is violated when either matches. A violation blocks the call and is returned to the
model as `{blockedReason, violations}` (never raised), so it can reconsider.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

CONSTITUTION_KEY: Final = "constitution.rules"


class ConstitutionRule(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    pattern: str
    tools: list[str]

    def compiled(self) -> re.Pattern[str]:
        # re caches compiled patterns, so calling this per tool call is cheap.
        return re.compile(self.pattern)


def parse_rules(value: Any) -> list[ConstitutionRule]:
    """Validate the `constitution.rules` value; None (cleared) means no rules.

    Raises:
        ValueError: with a message naming the offending rule (fit for a 400 body).
    """
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError("constitution.rules must be a list of {id, pattern, tools} objects")
    rules: list[ConstitutionRule] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        where = f"constitution.rules[{index}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where} must be an object with id, pattern and tools")
        unknown = sorted(set(item) - {"id", "pattern", "tools"})
        if unknown:
            raise ValueError(f"{where} has unknown field(s): {', '.join(unknown)}")
        rule_id = item.get("id")
        if not isinstance(rule_id, str) or not rule_id.strip():
            raise ValueError(f"{where}.id must be a non-empty string")
        if rule_id in seen:
            raise ValueError(f"{where}.id {rule_id!r} is used by more than one rule")
        seen.add(rule_id)
        pattern = item.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"{where}.pattern must be a non-empty string")
        try:
            re.compile(pattern)
        except re.error as err:
            raise ValueError(f"{where}.pattern is not a valid regular expression: {err}") from err
        tools = item.get("tools")
        if (
            not isinstance(tools, list)
            or not tools
            or not all(isinstance(t, str) and t for t in tools)
        ):
            raise ValueError(f"{where}.tools must be a non-empty list of tool names")
        rules.append(ConstitutionRule(id=rule_id, pattern=pattern, tools=list(tools)))
    return rules


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def violations(rules: list[ConstitutionRule], tool: str, arguments: Mapping[str, Any]) -> list[str]:
    """The ids of the rules this call violates, in rule order (empty: the call may run)."""
    applicable = [rule for rule in rules if tool in rule.tools]
    if not applicable:
        return []
    canonical = json.dumps(
        arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    texts = [canonical, *_strings(arguments)]
    return [rule.id for rule in applicable if any(rule.compiled().search(text) for text in texts)]
