"""Approval modes of the session agent: which tool calls run, ask a human, or are refused.

Pure (no I/O), so SessionWorkflow and unit tests use it directly. The five modes are
the spec's `ApprovalMode` enumeration (`POST /session/:id/approval-mode`):

| mode        | read, search | edit  | execute (shell)       | other / unknown |
|-------------|--------------|-------|-----------------------|-----------------|
| `plan`      | allow        | deny  | deny                  | deny            |
| `default`   | allow        | ask   | ask                   | ask             |
| `auto-edit` | allow        | allow | ask                   | ask             |
| `auto`      | allow        | allow | allow; ask when risky | ask             |
| `yolo`      | allow        | allow | allow                 | allow           |

`auto` stands in for the reference's "LLM classifier auto-approves safe actions, blocks
risky ones" with a deterministic allow-list (`runtime.sessions.shell_allowlist`): a shell
command runs unasked only when it is one read-only program of the list, with options the
list knows, paths that stay in the workspace and nothing the shell would interpret, and
the fence (the tool preview, which may do I/O) found that its paths and its program
resolve where the list assumed (`fenced`). Anything else asks, a call whose command is
not given included. `yolo` approves everything, unknown tools included.

A tool in `always_allowed` (granted by a `proceed_always` answer earlier in the
session) is allowed in every mode except `plan`: plan mode never modifies files or
runs commands, whatever was granted before.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeGuard, get_args

from runtime.failures import WireError
from runtime.sessions.shell_allowlist import check_shell_command

ApprovalMode = Literal["plan", "default", "auto-edit", "auto", "yolo"]
APPROVAL_MODES: Final[tuple[ApprovalMode, ...]] = get_args(ApprovalMode)
DEFAULT_APPROVAL_MODE: Final[ApprovalMode] = "default"

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
Decision = Literal["allow", "ask", "deny"]

# The session agent's tools and their ACP kind (`tool_call.kind`).
TOOL_KINDS: Final[dict[str, ToolKind]] = {
    "read_file": "read",
    "list_directory": "read",
    "glob": "search",
    "grep_search": "search",
    "write_file": "edit",
    "edit": "edit",
    "run_shell_command": "execute",
}

_READ_ONLY_KINDS: Final[frozenset[str]] = frozenset({"read", "search", "think"})

# `availableModes` of GET /session/:id/context (`state.modes`), as the reference shows.
AVAILABLE_MODES: Final[tuple[dict[str, str], ...]] = (
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
    {
        "id": "auto-edit",
        "name": "Auto Edit",
        "description": "Automatically approve file edits",
    },
    {
        "id": "auto",
        "name": "Auto",
        "description": "LLM classifier auto-approves safe actions, blocks risky ones",
    },
    {
        "id": "yolo",
        "name": "YOLO",
        "description": "Automatically approve all tools",
    },
)


def is_approval_mode(value: object) -> TypeGuard[ApprovalMode]:
    return isinstance(value, str) and value in APPROVAL_MODES


class InvalidApprovalMode(WireError):
    """`POST /session/:id/approval-mode` with a mode outside `APPROVAL_MODES`: 400."""

    kind: Literal["invalid_approval_mode"] = "invalid_approval_mode"

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "`mode` is required and must be one of the allowed values",
            "code": "invalid_approval_mode",
            "allowed": list(APPROVAL_MODES),
        }


def tool_kind(tool_name: str) -> ToolKind:
    """The ACP kind of a tool; tools this runtime does not know are `other`."""
    return TOOL_KINDS.get(tool_name, "other")


def is_mutating(tool_name: str) -> bool:
    """True unless the tool only reads (unknown tools count as mutating)."""
    return tool_kind(tool_name) not in _READ_ONLY_KINDS


def available_modes() -> list[dict[str, str]]:
    """A fresh copy of the `availableModes` list (callers may mutate it)."""
    return [dict(m) for m in AVAILABLE_MODES]


def needs_permission(
    mode: str,
    tool_name: str,
    always_allowed: frozenset[str] = frozenset(),
    *,
    command: str | None = None,
    workspace: str | None = None,
    fenced: bool = False,
    kind: ToolKind | None = None,
) -> Decision:
    """Decide a tool call under an approval mode (see the module table).

    `command` is the shell command of a `run_shell_command` call, `workspace` the
    workspace's absolute path and `fenced` the fence's verdict on the command (the
    preview's `shell_fenced`); only `auto` looks at them, and asks unless the allow-list
    accepts the command and the fence passed it. An unknown mode is treated as `default`
    (ask before anything mutating). `kind` overrides the kind the name gives: an MCP tool
    annotated read-only on a server the operator trusts is a `read`, any other `other`.
    """
    kind = kind or tool_kind(tool_name)
    if kind in _READ_ONLY_KINDS:
        return "allow"
    if mode == "plan":
        return "deny"
    if tool_name in always_allowed or mode == "yolo":
        return "allow"
    if mode == "auto-edit":
        return "allow" if kind == "edit" else "ask"
    if mode == "auto":
        if kind == "edit":
            return "allow"
        if kind == "execute":
            if command is None or not fenced:
                return "ask"
            return "allow" if check_shell_command(command, workspace).allowed else "ask"
        return "ask"
    return "ask"


def is_rejection(option_id: str | None) -> bool:
    """Whether a selected option refuses the call (the reference's `cancel`)."""
    return option_id is None or option_id == "cancel" or option_id.startswith("reject")
