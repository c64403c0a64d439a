"""Approval modes: the decision table for every mode × tool, grants and permission options."""

from __future__ import annotations

import pytest

from runtime.sessions.approval_modes import (
    APPROVAL_MODES,
    TOOL_KINDS,
    available_modes,
    is_approval_mode,
    is_mutating,
    is_rejection,
    needs_permission,
    tool_kind,
)
from runtime.sessions.views import modes_state

SAFE = "ls -la src"

# mode → tool → decision (shell decided with a read-only command the fence passed; the
# `auto` shell rule itself is tests/runtime/sessions/test_shell_allowlist.py).
TABLE: dict[str, dict[str, str]] = {
    "plan": {
        "read_file": "allow",
        "list_directory": "allow",
        "glob": "allow",
        "grep_search": "allow",
        "write_file": "deny",
        "edit": "deny",
        "run_shell_command": "deny",
        "web_fetch": "deny",
    },
    "default": {
        "read_file": "allow",
        "list_directory": "allow",
        "glob": "allow",
        "grep_search": "allow",
        "write_file": "ask",
        "edit": "ask",
        "run_shell_command": "ask",
        "web_fetch": "ask",
    },
    "auto-edit": {
        "read_file": "allow",
        "list_directory": "allow",
        "glob": "allow",
        "grep_search": "allow",
        "write_file": "allow",
        "edit": "allow",
        "run_shell_command": "ask",
        "web_fetch": "ask",
    },
    "auto": {
        "read_file": "allow",
        "list_directory": "allow",
        "glob": "allow",
        "grep_search": "allow",
        "write_file": "allow",
        "edit": "allow",
        "run_shell_command": "allow",
        "web_fetch": "ask",
    },
    "yolo": {
        "read_file": "allow",
        "list_directory": "allow",
        "glob": "allow",
        "grep_search": "allow",
        "write_file": "allow",
        "edit": "allow",
        "run_shell_command": "allow",
        "web_fetch": "allow",
    },
}

CASES = [(mode, tool, decision) for mode, row in TABLE.items() for tool, decision in row.items()]


def test_modes_and_kinds() -> None:
    assert APPROVAL_MODES == ("plan", "default", "auto-edit", "auto", "yolo")
    assert set(TABLE) == set(APPROVAL_MODES)
    assert TOOL_KINDS == {
        "read_file": "read",
        "list_directory": "read",
        "glob": "search",
        "grep_search": "search",
        "write_file": "edit",
        "edit": "edit",
        "run_shell_command": "execute",
    }
    assert tool_kind("web_fetch") == "other"
    assert [t for t in TOOL_KINDS if is_mutating(t)] == ["write_file", "edit", "run_shell_command"]
    assert is_mutating("mcp__x__y")
    assert is_approval_mode("auto-edit") and not is_approval_mode("autoedit")
    assert not is_approval_mode(None)


@pytest.mark.parametrize(("mode", "tool", "expected"), CASES)
def test_decision_table(mode: str, tool: str, expected: str) -> None:
    command = SAFE if tool == "run_shell_command" else None
    assert needs_permission(mode, tool, frozenset(), command=command, fenced=True) == expected


@pytest.mark.parametrize(("mode", "tool", "expected"), CASES)
def test_always_allowed_allows_except_in_plan(mode: str, tool: str, expected: str) -> None:
    granted = frozenset({tool})
    decision = needs_permission(mode, tool, granted, command="rm -rf /")
    if mode == "plan":
        assert decision == expected  # plan never modifies, whatever was granted
    else:
        assert decision == "allow"


def test_always_allowed_is_per_tool() -> None:
    granted = frozenset({"write_file"})
    assert needs_permission("default", "write_file", granted) == "allow"
    assert needs_permission("default", "run_shell_command", granted, command=SAFE) == "ask"
    assert needs_permission("default", "edit", granted) == "ask"
    assert needs_permission("default", "edit", granted | {"edit"}) == "allow"


def test_unknown_mode_behaves_like_default() -> None:
    for tool, decision in TABLE["default"].items():
        assert needs_permission("bogus", tool, frozenset(), command=SAFE, fenced=True) == decision


@pytest.mark.parametrize(
    "command",
    ["cat /etc/passwd", "cat ../secret.txt", "echo $(whoami)", "rm -rf build", "   "],
)
def test_auto_asks_for_commands_off_the_allow_list(command: str) -> None:
    assert needs_permission("auto", "run_shell_command", command=command, fenced=True) == "ask"
    assert needs_permission("yolo", "run_shell_command", command=command) == "allow"


@pytest.mark.parametrize("command", ["ls -la", "grep -rn foo src", "wc -l README.md"])
def test_auto_allows_read_only_commands_the_fence_passed(command: str) -> None:
    assert needs_permission("auto", "run_shell_command", command=command, fenced=True) == "allow"
    # The fence did not pass it (a symlink out, the data dir, a PATH into the workspace),
    # or was not asked: a human decides.
    assert needs_permission("auto", "run_shell_command", command=command) == "ask"


def test_auto_without_command_asks() -> None:
    assert needs_permission("auto", "run_shell_command", frozenset(), fenced=True) == "ask"


def test_an_absolute_path_is_allowed_only_under_the_workspace() -> None:
    def decide(workspace: str | None) -> str:
        return needs_permission(
            "auto", "run_shell_command", command="cat /ws/a.txt", workspace=workspace, fenced=True
        )

    assert decide("/ws") == "allow"
    assert decide("/other") == "ask"
    assert decide(None) == "ask"


def test_option_helpers() -> None:
    assert is_rejection("cancel") and is_rejection(None) and is_rejection("reject_once")
    assert not is_rejection("proceed_once")
    assert not is_rejection("proceed_always_project")


REFERENCE_MODES = [
    {
        "id": "plan",
        "name": "Plan",
        "description": "Analyze only, do not modify files or execute commands",
    },
    {
        "id": "default",
        "name": "Default",
        "description": "Require approval for file edits or shell commands",
    },
    {"id": "auto-edit", "name": "Auto Edit", "description": "Automatically approve file edits"},
    {
        "id": "auto",
        "name": "Auto",
        "description": "LLM classifier auto-approves safe actions, blocks risky ones",
    },
    {"id": "yolo", "name": "YOLO", "description": "Automatically approve all tools"},
]


def test_available_modes_match_reference_029() -> None:
    assert available_modes() == REFERENCE_MODES
    available_modes()[0]["id"] = "mutated"
    assert available_modes() == REFERENCE_MODES
    assert modes_state("default").model_dump(mode="json") == {
        "currentModeId": "default",
        "availableModes": REFERENCE_MODES,
    }
