"""The session agent's own tools, declared through the one tool layer (runtime/tools).

Their argument models say what the model is offered (`ToolDescriptor.spec`) and what a
call must satisfy before it runs (`ToolDescriptor.validate`). Validation is lenient where
models are (an unknown extra argument is ignored; `read_file` also takes `file_path` or
`path`), while the offered schema stays closed.
"""

from __future__ import annotations

from typing import Final

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from runtime.tools import READ_ONLY, ToolAnnotations, ToolDescriptor

_PATH = "Absolute path of the file (or relative to the workspace)."


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra={"additionalProperties": False})


class ReadFileArgs(_Args):
    absolute_path: str = Field(
        min_length=1,
        description=_PATH,
        validation_alias=AliasChoices("absolute_path", "file_path", "path"),
    )
    offset: int | None = Field(None, ge=0, description="0-based line to start from.")
    limit: int | None = Field(None, ge=1, description="Maximum number of lines to return.")


class ListDirectoryArgs(_Args):
    # Offered as required; a call without it lists the workspace root, as it always did.
    model_config = ConfigDict(
        extra="ignore", json_schema_extra={"additionalProperties": False, "required": ["path"]}
    )
    path: str | None = Field(
        None, description="Absolute path of the directory (or relative to the workspace)."
    )


class GlobArgs(_Args):
    pattern: str = Field(min_length=1, description="Glob pattern, relative to path.")
    path: str | None = Field(
        None, description="Directory to search from (default: the workspace root)."
    )


class GrepSearchArgs(_Args):
    pattern: str = Field(min_length=1, description="Regular expression (Python syntax).")
    path: str | None = Field(
        None, description="File or directory to search (default: the workspace root)."
    )
    include: str | None = Field(
        None, description="Only files matching this glob, e.g. '*.py' or '*.{ts,tsx}'."
    )


class WriteFileArgs(_Args):
    file_path: str = Field(min_length=1, description=_PATH)
    content: str = Field(description="The full content to write.")


class EditArgs(_Args):
    file_path: str = Field(min_length=1, description=_PATH)
    old_string: str = Field(description="Exact text to replace, with enough context to be unique.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool | None = Field(None, description="Replace every occurrence (default false).")


class RunShellCommandArgs(_Args):
    command: str = Field(min_length=1, description="The command line, run with /bin/sh -c.")
    description: str | None = Field(None, description="A short description of what it does.")


# A file write: recorded under its operation id, applied by compare-and-swap on the
# file's content hash (activities/workspace/effects.py): exactly once.
_FILE_EFFECT = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)

SESSION_TOOLS: Final[dict[str, ToolDescriptor]] = {
    tool.name: tool
    for tool in (
        ToolDescriptor(
            name="read_file",
            title="Read file",
            description=(
                "Read a text file of the workspace. Returns its lines; use offset "
                "(0-based line) and limit (line count) to page through large files."
            ),
            arguments=ReadFileArgs,
            annotations=READ_ONLY,
        ),
        ToolDescriptor(
            name="list_directory",
            title="List directory",
            description="List the entries of a workspace directory (directories first).",
            arguments=ListDirectoryArgs,
            annotations=READ_ONLY,
        ),
        ToolDescriptor(
            name="glob",
            title="Find files",
            description=(
                "Find files whose path matches a glob pattern (e.g. '**/*.py'), "
                "relative to a directory of the workspace."
            ),
            arguments=GlobArgs,
            annotations=READ_ONLY,
        ),
        ToolDescriptor(
            name="grep_search",
            title="Search file contents",
            description=(
                "Search file contents with a regular expression; returns matching lines "
                "with their file and line number. Searches time out."
            ),
            arguments=GrepSearchArgs,
            annotations=READ_ONLY,
        ),
        ToolDescriptor(
            name="write_file",
            title="Write file",
            description=(
                "Write a file of the workspace, creating it (and its directories) or replacing it."
            ),
            arguments=WriteFileArgs,
            annotations=_FILE_EFFECT.model_copy(update={"idempotentHint": True}),
            effect_ledger=True,
        ),
        ToolDescriptor(
            name="edit",
            title="Edit file",
            description=(
                "Replace old_string by new_string in a file. old_string must match exactly "
                "once unless replace_all is true; an empty old_string creates a new file."
            ),
            arguments=EditArgs,
            annotations=_FILE_EFFECT,
            effect_ledger=True,
        ),
        ToolDescriptor(
            name="run_shell_command",
            title="Run shell command",
            description=(
                "Run a shell command in the workspace directory; returns its combined "
                "output and exit code. Commands time out."
            ),
            arguments=RunShellCommandArgs,
            # A command's effect cannot be made idempotent: at most once, outcome_unknown
            # when its worker was lost mid-run.
            annotations=ToolAnnotations(),
        ),
    )
}

SHELL_TOOL: Final = "run_shell_command"
