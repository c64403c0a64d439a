"""The options a permission request offers for a tool call (the reference agent's): allow
always (scoped to a shell command's program and subcommand, or to an MCP tool), allow
once, reject."""

from __future__ import annotations

import re
import shlex

from runtime.sessions.permissions import PermissionOption

_PROCEED_ONCE = PermissionOption(optionId="proceed_once", name="Allow", kind="allow_once")
_REJECT = PermissionOption(optionId="cancel", name="Reject", kind="reject_once")

# Tools whose first argument is a subcommand worth keeping in an always-allow rule.
_SUBCOMMAND_TOOLS = frozenset(
    {"git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "kubectl", "pip", "pip3"}
    | {"uv", "poetry", "gh", "brew", "apt", "apt-get", "systemctl"}
)
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WORD = re.compile(r"^[A-Za-z0-9][\w.:+-]*$")
_SEPARATORS = frozenset("();|&")


def _command_segments(command: str) -> list[list[str]]:
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain words
        tokens = command.split()
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= _SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    return [segment for segment in segments if segment]


def shell_scope_label(command: str) -> str:
    """The `<prefix> *` rule(s) an always-allow option names for a shell command.

    `touch shell_made.txt` -> `touch *`; `git add package.json` -> `git add *`;
    compound commands list each distinct rule, comma-separated.
    """
    rules: list[str] = []
    for segment in _command_segments(command):
        words = list(segment)
        while words and _ENV_ASSIGNMENT.match(words[0]):
            words.pop(0)
        if not words or not _WORD.match(words[0]):
            continue
        prefix = words[0]
        if prefix in _SUBCOMMAND_TOOLS and len(words) > 1 and _WORD.match(words[1]):
            prefix = f"{prefix} {words[1]}"
        rule = f"{prefix} *"
        if rule not in rules:
            rules.append(rule)
    return ", ".join(rules) if rules else command.strip()


def default_options(tool_kind: str, tool_name: str, subject: str) -> list[PermissionOption]:
    """The options the reference agent offers for a tool call needing approval.

    `tool_kind` is the ACP tool kind (`edit`, `execute`, ...), `tool_name` the
    tool's name (`write_file`, `run_shell_command`, `mcp__server__tool`), and
    `subject` what the call acts on (the shell command for `execute`).
    """
    always: list[PermissionOption]
    if tool_kind == "edit":
        always = [
            PermissionOption(optionId="proceed_always", name="Allow All Edits", kind="allow_always")
        ]
    else:
        if tool_kind == "execute":
            scope = f": {shell_scope_label(subject)}"
        elif tool_kind == "mcp" or tool_name.startswith("mcp__"):
            scope = f": {tool_name}"
        else:
            scope = ""
        always = [
            PermissionOption(
                optionId="proceed_always_project",
                name=f"Always Allow in project{scope}",
                kind="allow_always",
            ),
            PermissionOption(
                optionId="proceed_always_user",
                name=f"Always Allow for user{scope}",
                kind="allow_always",
            ),
        ]
    return [*always, _PROCEED_ONCE.model_copy(), _REJECT.model_copy()]
