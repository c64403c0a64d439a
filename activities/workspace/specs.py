"""The model-facing specs of the session tools (OpenAI-style JSON schemas)."""

from __future__ import annotations

from typing import Any

from activities.llm import ToolSpec


def tool_specs(shell_enabled: bool) -> list[ToolSpec]:
    """OpenAI-style specs of the session tools (the shell only when enabled)."""
    specs = [
        ToolSpec(
            name="read_file",
            description=(
                "Read a text file of the workspace. Returns its lines; use offset "
                "(0-based line) and limit (line count) to page through large files."
            ),
            parameters=_schema(
                {
                    "absolute_path": _string(
                        "Absolute path of the file (or relative to the workspace)."
                    ),
                    "offset": _integer("0-based line to start from.", minimum=0),
                    "limit": _integer("Maximum number of lines to return.", minimum=1),
                },
                ["absolute_path"],
            ),
        ),
        ToolSpec(
            name="list_directory",
            description="List the entries of a workspace directory (directories first).",
            parameters=_schema(
                {"path": _string("Absolute path of the directory (or relative to the workspace).")},
                ["path"],
            ),
        ),
        ToolSpec(
            name="glob",
            description=(
                "Find files whose path matches a glob pattern (e.g. '**/*.py'), "
                "relative to a directory of the workspace."
            ),
            parameters=_schema(
                {
                    "pattern": _string("Glob pattern, relative to path."),
                    "path": _string("Directory to search from (default: the workspace root)."),
                },
                ["pattern"],
            ),
        ),
        ToolSpec(
            name="grep_search",
            description=(
                "Search file contents with a regular expression; returns matching lines "
                "with their file and line number. Searches time out."
            ),
            parameters=_schema(
                {
                    "pattern": _string("Regular expression (Python syntax)."),
                    "path": _string("File or directory to search (default: the workspace root)."),
                    "include": _string(
                        "Only files matching this glob, e.g. '*.py' or '*.{ts,tsx}'."
                    ),
                },
                ["pattern"],
            ),
        ),
        ToolSpec(
            name="write_file",
            description=(
                "Write a file of the workspace, creating it (and its directories) or replacing it."
            ),
            parameters=_schema(
                {
                    "file_path": _string(
                        "Absolute path of the file (or relative to the workspace)."
                    ),
                    "content": _string("The full content to write."),
                },
                ["file_path", "content"],
            ),
        ),
        ToolSpec(
            name="edit",
            description=(
                "Replace old_string by new_string in a file. old_string must match exactly "
                "once unless replace_all is true; an empty old_string creates a new file."
            ),
            parameters=_schema(
                {
                    "file_path": _string(
                        "Absolute path of the file (or relative to the workspace)."
                    ),
                    "old_string": _string(
                        "Exact text to replace, with enough context to be unique."
                    ),
                    "new_string": _string("Replacement text."),
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence (default false).",
                    },
                },
                ["file_path", "old_string", "new_string"],
            ),
        ),
    ]
    if shell_enabled:
        specs.append(
            ToolSpec(
                name="run_shell_command",
                description=(
                    "Run a shell command in the workspace directory; returns its combined "
                    "output and exit code. Commands time out."
                ),
                parameters=_schema(
                    {
                        "command": _string("The command line, run with /bin/sh -c."),
                        "description": _string("A short description of what it does."),
                    },
                    ["command"],
                ),
            )
        )
    return specs


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _integer(description: str, *, minimum: int) -> dict[str, Any]:
    return {"type": "integer", "description": description, "minimum": minimum}
