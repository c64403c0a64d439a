"""The one tool layer (runtime/tools): classification, schemas, validation wording."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

from runtime.sessions.tools import SESSION_TOOLS
from runtime.tools import Dispatch, ToolAnnotations, ToolArgumentsError, ToolDescriptor
from runtime.windows.tools import WINDOWS_TOOLS
from runtime.windows.verbs import WindowsVerb


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="Who.")
    count: int | None = Field(None, ge=1, description="How many.")


def _tool(**hints: bool) -> ToolDescriptor:
    return ToolDescriptor(
        name="t", description="d", arguments=_Args, annotations=ToolAnnotations(**hints)
    )


@pytest.mark.parametrize(
    ("hints", "effect_ledger", "dispatch"),
    [
        ({"readOnlyHint": True}, False, Dispatch.LOCAL),
        ({"readOnlyHint": True, "idempotentHint": False}, True, Dispatch.LOCAL),
        ({"idempotentHint": True}, False, Dispatch.EXACTLY_ONCE),
        ({}, True, Dispatch.EXACTLY_ONCE),
        ({}, False, Dispatch.AT_MOST_ONCE),
        ({"destructiveHint": False, "openWorldHint": False}, False, Dispatch.AT_MOST_ONCE),
    ],
)
def test_the_annotations_alone_decide_the_dispatch(
    hints: dict[str, bool], effect_ledger: bool, dispatch: Dispatch
) -> None:
    tool = ToolDescriptor(
        name="t",
        description="d",
        annotations=ToolAnnotations(**hints),
        effect_ledger=effect_ledger,
    )
    assert tool.dispatch is dispatch


def test_a_servers_missing_hints_take_mcps_defaults() -> None:
    assert ToolAnnotations.of(None) == ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True
    )
    given = ToolAnnotations.of({"readOnlyHint": True, "destructiveHint": None, "title": "x"})
    assert given.readOnlyHint and given.destructiveHint and not given.idempotentHint


def test_the_schema_is_what_a_model_api_takes() -> None:
    assert _tool().spec().parameters == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "Who."},
            "count": {"type": "integer", "minimum": 1, "description": "How many."},
        },
        "required": ["name"],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "Invalid arguments: name is required."),
        ({"name": 3}, "Invalid arguments: name must be a string."),
        ({"name": ""}, "Invalid arguments: name must not be empty."),
        ({"name": "a", "count": 0}, "Invalid arguments: count must be >= 1."),
        ({"name": "a", "count": "x"}, "Invalid arguments: count must be an integer."),
        ({"name": "a", "other": 1}, "Invalid arguments: other is not an argument of this tool."),
        ({"count": 0}, "Invalid arguments: name is required; count must be >= 1."),
    ],
)
def test_one_wording_for_what_is_wrong(args: dict[str, object], message: str) -> None:
    with pytest.raises(ToolArgumentsError) as refused:
        _tool().validate(args)
    assert str(refused.value) == message


def test_the_session_tools_are_classified_as_they_are_dispatched() -> None:
    dispatch = {name: tool.dispatch for name, tool in SESSION_TOOLS.items()}
    assert dispatch == {
        "read_file": Dispatch.LOCAL,
        "list_directory": Dispatch.LOCAL,
        "glob": Dispatch.LOCAL,
        "grep_search": Dispatch.LOCAL,
        "write_file": Dispatch.EXACTLY_ONCE,
        "edit": Dispatch.EXACTLY_ONCE,
        "run_shell_command": Dispatch.AT_MOST_ONCE,
    }


def test_read_file_takes_the_path_under_any_of_its_names() -> None:
    tool = SESSION_TOOLS["read_file"]
    for key in ("absolute_path", "file_path", "path"):
        assert tool.validate({key: "a.txt"}) is not None
    assert tool.spec().parameters["required"] == ["absolute_path"]


def test_every_windows_verb_is_a_descriptor_with_a_closed_schema() -> None:
    assert set(WINDOWS_TOOLS) == set(WindowsVerb)
    for tool in WINDOWS_TOOLS.values():
        schema = tool.spec().parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "title" not in _keys(schema) and "description" not in schema
    assert WINDOWS_TOOLS[WindowsVerb.SCREENSHOT].read_only
    assert not WINDOWS_TOOLS[WindowsVerb.CLICK].read_only


def _keys(node: object) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_a_tool_declared_by_its_json_schema_is_validated_in_the_same_words() -> None:
    tool = ToolDescriptor(
        name="t",
        description="d",
        annotations=ToolAnnotations(),
        input_schema={
            "type": "object",
            "properties": {
                "q": {"type": "string", "minLength": 1},
                "n": {"type": "integer", "minimum": 1},
                "kind": {"type": "string", "enum": ["a", "b"]},
            },
            "required": ["q"],
            "additionalProperties": False,
        },
    )
    assert tool.validate({"q": "x"}) is None
    with pytest.raises(ToolArgumentsError) as refused:
        tool.validate({"n": 0, "kind": "c"})
    assert str(refused.value) == (
        "Invalid arguments: q is required; kind must be one of a, b; n must be >= 1."
    )
    with pytest.raises(ToolArgumentsError, match="q must be a string"):
        tool.validate({"q": 3})
    # A schema jsonschema cannot apply is left to its server.
    odd = ToolDescriptor(
        name="o", description="d", annotations=ToolAnnotations(), input_schema={"type": 5}
    )
    assert odd.validate({"anything": 1}) is None


def test_the_standing_agents_tools_are_descriptors_classified_by_what_they_do() -> None:
    from runtime.standing_agents.tool_catalog import TOOLS, argument_problem

    assert TOOLS["agent_query_memory"].dispatch is Dispatch.LOCAL
    assert TOOLS["soa_send_message"].dispatch is Dispatch.EXACTLY_ONCE
    assert argument_problem("intelligence_knowledge_query", {}) == (
        "Invalid arguments: query is required."
    )


def test_the_agent_tools_catalog_uses_the_same_descriptor() -> None:
    from runtime.investigation.catalog import TOOL_DESCRIPTORS, TOOL_IDS

    tools = [TOOL_DESCRIPTORS[tool_id].tool for tool_id in TOOL_IDS]
    assert len(tools) == 9 and [t.name for t in tools] == list(TOOL_IDS)
    prepares = {t.name for t in tools if not t.read_only}
    assert prepares == {e.tool_id for e in TOOL_DESCRIPTORS.values() if e.action_class == "prepare"}
    for entry in TOOL_DESCRIPTORS.values():
        assert entry.tool.spec().parameters == entry.input_schema
