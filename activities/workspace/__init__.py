"""The session agent's tools, confined to the bound workspace (a Temporal activity).

Tools (argument names follow the reference's `rawInput`):

| tool                | kind    | arguments                                               |
|---------------------|---------|---------------------------------------------------------|
| `read_file`         | read    | `absolute_path` or `file_path`, `offset?`, `limit?`     |
| `list_directory`    | read    | `path`                                                  |
| `glob`              | search  | `pattern`, `path?`                                      |
| `grep_search`       | search  | `pattern` (a Python regex), `path?`, `include?` (glob)  |
| `write_file`        | edit    | `file_path`, `content`                                  |
| `edit`              | edit    | `file_path`, `old_string`, `new_string`, `replace_all?` |
| `run_shell_command` | execute | `command`, `description?` (only when the shell is on)   |

Confinement: every path goes through the workspace fence (`runtime.workspace.fence`,
the file routes' own): resolved (`..`, symlinks, absolute paths) before any access, it
must land on the workspace or inside it and never in the daemon's data dir (`data_dir`,
when it lies in the workspace); otherwise the call fails, naming the rule, without
touching the path. The access itself walks from a descriptor of the workspace without
following a symlink (one swapped in after the check is refused), opens regular files
only (a FIFO is a tool error, never a blocked thread) and bounds every read. Searches
never walk out of the fence, nor into the data dir, and refuse `..` in patterns.

The shell runs `asyncio.create_subprocess_shell` in the workspace directory, in its
own process group (killed when the command ends, times out or is cancelled, so
nothing it started in the background outlives the call), with stdin closed and a
minimal environment (PATH, HOME, LANG, TERM, TMPDIR: no API key or token reaches it).
A command that exits with a non-zero code is still `completed` (its exit code is in
the output, as the reference reports it); a timeout or a failure to start is `failed`.

The search tools (`glob`, `grep_search`) run in a child interpreter
(`runtime.workspace.search_child`, the same `re` and `pathlib.glob` semantics), never on
the worker's own threads: a regex that backtracks catastrophically (`(a+)+$`) would
otherwise hold the GIL and starve every other workflow of the worker. The whole call
(every file searched) is bounded by `search_timeout` (`SEARCH_TIMEOUT_SECONDS`, or the
worker's `session_search_timeout_ms`); past it the child is killed and the call is
`failed` with a message naming the bound. At most `search_children` run at once in the
worker (`AGENTRT_SEARCH_CHILDREN`); a call waits for a slot within its bound. An
`include` may expand to at most `MAX_INCLUDE_PATTERNS` brace alternatives.

Everything a result carries is bounded: `output_text` to `MAX_OUTPUT_BYTES` (UTF-8),
and a diff side to `MAX_DIFF_CHARS` (a larger diff becomes a one-line note), so a
result can travel through workflow history.

Results and previews use the ACP shapes the reference emits on the session's SSE
stream: `describe_call` gives the `tool_call` (also the `toolCall` of a
`permission_request`), `describe_result` the `tool_call_update`; the session update
adds `"sessionUpdate": "tool_call"` / `"tool_call_update"` around them.
"""

from activities.workspace.edits import MAX_FILE_BYTES
from activities.workspace.effects import OUTCOME_UNKNOWN, run_once
from activities.workspace.previews import (
    describe_call,
    describe_result,
    shell_fenced,
    target_hash,
)
from activities.workspace.specs import tool_specs
from activities.workspace.tools import SHELL_TIMEOUT_SECONDS, WorkspaceTools
from runtime.tools.results import (
    FILE_TOOLS,
    MAX_DIFF_CHARS,
    MAX_OUTPUT_BYTES,
    FileChange,
    ToolError,
    ToolResult,
    denied_result,
    failed_result,
    rejected_result,
)
from runtime.workspace.search import SEARCH_SCRIPT, SEARCH_TIMEOUT_SECONDS

__all__ = [
    "FILE_TOOLS",
    "MAX_DIFF_CHARS",
    "MAX_FILE_BYTES",
    "MAX_OUTPUT_BYTES",
    "OUTCOME_UNKNOWN",
    "SEARCH_SCRIPT",
    "SEARCH_TIMEOUT_SECONDS",
    "SHELL_TIMEOUT_SECONDS",
    "FileChange",
    "ToolError",
    "ToolResult",
    "WorkspaceTools",
    "denied_result",
    "describe_call",
    "describe_result",
    "failed_result",
    "rejected_result",
    "run_once",
    "shell_fenced",
    "target_hash",
    "tool_specs",
]
