"""`WorkspaceTools`: the tools themselves (read, list, search, write, edit, shell)."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from activities.workspace.arguments import optional_int, optional_str, required_str
from activities.workspace.edits import MAX_FILE_BYTES, edited, read_existing_bytes
from activities.workspace.paths import fence_of, relative, resolve, tool_error
from runtime.llm.contracts import ToolCall
from runtime.mcp.config import AGENT_CONFIG_DIR
from runtime.sessions.tools import SESSION_TOOLS
from runtime.telemetry import tracer
from runtime.tools import ToolArgumentsError
from runtime.tools.results import (
    MAX_OUTPUT_BYTES,
    FileChange,
    ToolError,
    ToolResult,
    bound,
    diff_item,
    failed_result,
    text_item,
)
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError
from runtime.workspace.files import ABSENT, WORKSPACE_UMASK, content_hash
from runtime.workspace.search import (
    DEFAULT_SEARCH_CHILDREN,
    SEARCH_TIMEOUT_SECONDS,
    SearchBusy,
    SearchFailed,
    kill_group,
    run_search,
)
from runtime.workspace.search_child import MAX_GREP_MATCHES
from runtime.workspace.text import NotText, TextProfile, decode, encode, line_ending_of, normalize

DEFAULT_READ_LINES: Final = 2000


MAX_LIST_ENTRIES: Final = 1000


SHELL_TIMEOUT_SECONDS: Final = 120.0


def writable(fence: Fence, raw: str) -> Path:
    """The file a session tool may write: inside the fence, and not under the workspace's
    agent configuration (`.qwen/`, where `mcpServers` says which commands the worker
    runs): the agent never changes what it may run or trust (an operator does, through
    the file routes or `PUT /workspace/mcp/servers/:name`)."""
    path = resolve(fence, raw)
    if fence.relative(path).split("/", 1)[0] == AGENT_CONFIG_DIR:
        raise ToolError(
            f"{fence.relative(path)} is agentrt's configuration of this workspace "
            f"({AGENT_CONFIG_DIR}/): session tools do not write it"
        )
    return path


class WorkspaceTools:
    def __init__(
        self,
        workspace: Path,
        shell_enabled: bool = False,
        *,
        shell_timeout: float = SHELL_TIMEOUT_SECONDS,
        search_timeout: float = SEARCH_TIMEOUT_SECONDS,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        data_dir: Path | None = None,
        search_children: int = DEFAULT_SEARCH_CHILDREN,
    ) -> None:
        self.workspace = Path(workspace)
        self.shell_enabled = shell_enabled
        self.shell_timeout = shell_timeout
        self.search_timeout = search_timeout
        self.max_output_bytes = max_output_bytes
        # The daemon's data dir: never read or written when it lies in the workspace.
        self.data_dir = data_dir
        self.search_children = search_children

    async def run(self, invocation: ToolCall) -> ToolResult:
        """Run a tool call; every failure is a `failed` result, never an exception."""
        with tracer.start_as_current_span(f"tool {invocation.name}"):
            return await self._run(invocation)

    async def _run(self, invocation: ToolCall) -> ToolResult:
        fence = self.fence()
        if fence is None:
            return failed_result("The workspace does not exist.")
        # File tools do bounded, linear I/O on a thread, through the workspace fence
        # (regular files only: a FIFO never blocks a thread); the search tools and the
        # shell run in child processes killed at their time bound (CPU-bound work holds
        # the GIL).
        handlers: dict[str, Callable[[Fence, dict[str, Any]], ToolResult]] = {
            "read_file": self._read_file,
            "list_directory": self._list_directory,
            "write_file": self._write_file,
            "edit": self._edit,
        }
        children: dict[str, Callable[[Fence, dict[str, Any]], Awaitable[ToolResult]]] = {
            "glob": self._glob,
            "grep_search": self._grep_search,
            "run_shell_command": self._shell,
        }
        args = invocation.arguments
        tool = SESSION_TOOLS.get(invocation.name)
        if tool is None:
            return failed_result(f'Tool "{invocation.name}" not found.')
        try:
            tool.validate(args)
        except ToolArgumentsError as err:
            return failed_result(str(err))
        try:
            child = children.get(invocation.name)
            if child is not None:
                return await child(fence, args)
            handler = handlers.get(invocation.name)
            if handler is None:
                return failed_result(f'Tool "{invocation.name}" not found.')
            return await asyncio.to_thread(handler, fence, args)
        except ToolError as err:
            return failed_result(str(err))
        except FileError as err:
            return failed_result(str(tool_error(err, _shown_argument(args))))
        except ValueError as err:
            return failed_result(f"Invalid arguments: {err}")
        except OSError as err:
            return failed_result(f"{type(err).__name__}: {err.strerror or err}")

    # -- read ---------------------------------------------------------------

    def _read_file(self, fence: Fence, args: dict[str, Any]) -> ToolResult:
        raw = required_str(args, "absolute_path", "file_path", "path")
        offset = optional_int(args, "offset", minimum=0) or 0
        limit = optional_int(args, "limit", minimum=1)
        path = resolve(fence, raw)
        shown = relative(fence, path)
        info = _lstat(fence, path)
        if info is None:
            raise ToolError(f"File not found: {shown}")
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"Path is a directory: {shown}")
        if info.st_size > MAX_FILE_BYTES:
            raise ToolError(f"File is too large ({info.st_size} bytes): {shown}")
        try:
            data = fence.read(path, limit=MAX_FILE_BYTES)
        except FileError as err:
            raise tool_error(err, shown) from err
        try:
            # The file routes' decoding: BOM dropped, CRLF shown as `\n` (written back as CRLF).
            text, _ = decode(data)
        except NotText:
            raise ToolError(f"Cannot read binary file: {shown}") from None
        lines = text.splitlines(keepends=True)
        end = min(len(lines), offset + (limit or DEFAULT_READ_LINES))
        body = "".join(lines[offset:end])
        if offset > 0 or end < len(lines):
            first = offset + 1 if end > offset else offset
            body = f"Showing lines {first}-{end} of {len(lines)} total lines.\n---\n" + body
        text = self._bound(body)
        return ToolResult(
            status="completed",
            output_text=text,
            content=[text_item(text)],
            locations=[{"path": str(path)}],
        )

    def _list_directory(self, fence: Fence, args: dict[str, Any]) -> ToolResult:
        raw = optional_str(args, "path") or "."
        path = resolve(fence, raw)
        shown = relative(fence, path)
        info = _lstat(fence, path)
        if info is None:
            raise ToolError(f"Directory not found: {shown}")
        if not stat.S_ISDIR(info.st_mode):
            raise ToolError(f"Path is not a directory: {shown}")
        # Names only, never followed: a symlink shows as a directory only when it resolves
        # to one inside the fence.
        listed = [(_is_directory(fence, path, e.name, e.kind), e.name) for e in fence.entries(path)]
        entries = sorted(listed, key=lambda e: (not e[0], e[1]))
        lines = [f"[DIR] {name}" if is_dir else name for is_dir, name in entries[:MAX_LIST_ENTRIES]]
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(f"... ({len(entries) - MAX_LIST_ENTRIES} more entries)")
        text = (
            f"Directory listing for {path}:\n" + "\n".join(lines)
            if lines
            else f"Directory {path} is empty."
        )
        text = self._bound(text)
        return ToolResult(
            status="completed",
            output_text=text,
            content=[text_item(text)],
            locations=[{"path": str(path)}],
        )

    async def _glob(self, fence: Fence, args: dict[str, Any]) -> ToolResult:
        pattern = required_str(args, "pattern")
        if Path(pattern).is_absolute():
            raise ToolError("pattern must be relative to path.")
        try:
            Fence.pattern(pattern)
        except FileError as err:
            raise ToolError(f"Invalid pattern: {err.message} ({err.hint}).") from err
        base = resolve(fence, optional_str(args, "path") or ".")
        info = await asyncio.to_thread(_lstat, fence, base)
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise ToolError(f"Directory not found: {relative(fence, base)}")
        answer = await self._search(
            "glob",
            {"op": "glob", **_search_scope(fence, base), "pattern": pattern},
            hint="the pattern may match too many paths",
        )
        found = [str(p) for p in answer["paths"]]
        if not found:
            text = f'No files found matching pattern "{pattern}" within {base}.'
        else:
            text = (
                f'Found {len(found)} file(s) matching "{pattern}" within {base}'
                + (" (first results only)" if answer["more"] else "")
                + ":\n"
                + "\n".join(found)
            )
        text = self._bound(text)
        return ToolResult(status="completed", output_text=text, content=[text_item(text)])

    async def _grep_search(self, fence: Fence, args: dict[str, Any]) -> ToolResult:
        pattern = required_str(args, "pattern")
        include = optional_str(args, "include")
        base = resolve(fence, optional_str(args, "path") or ".")
        shown = relative(fence, base)
        if await asyncio.to_thread(_lstat, fence, base) is None:
            raise ToolError(f"Path not found: {shown}")
        answer = await self._search(
            "grep_search",
            {
                "op": "grep",
                **_search_scope(fence, base),
                "pattern": pattern,
                "include": include,
            },
            hint="the pattern may backtrack catastrophically",
        )
        matches: dict[str, list[str]] = answer["matches"]
        count: int = answer["count"]
        where = f'in path "{shown}"' + (f' (filter: "{include}")' if include else "")
        if not matches:
            text = f'No matches found for pattern "{pattern}" {where}.'
        else:
            blocks = [f"File: {rel}\n" + "\n".join(lines) for rel, lines in matches.items()]
            text = (
                f'Found {count} match(es) for pattern "{pattern}" {where}'
                + (" (first matches only)" if count >= MAX_GREP_MATCHES else "")
                + ":\n---\n"
                + "\n---\n".join(blocks)
                + "\n---"
            )
        text = self._bound(text)
        return ToolResult(status="completed", output_text=text, content=[text_item(text)])

    async def _search(self, tool: str, request: dict[str, Any], *, hint: str) -> dict[str, Any]:
        """Run a search in a child process (`runtime.workspace.search_child`), killed at the
        call's time bound, so no pattern can hold the worker's interpreter or outlive it.
        At most `search_children` run at once in this worker: a call waits for a slot
        within its own time bound."""
        try:
            answer = await run_search(
                request, self.search_timeout, limit=self.search_children, wait=True
            )
        except SearchBusy as err:
            raise ToolError(
                f"{tool} could not start within {self.search_timeout:g} s: {err}; retry later."
            ) from err
        except SearchFailed as err:
            raise ToolError(str(err)) from err
        if answer is None:
            raise ToolError(
                f"{tool} timed out after {self.search_timeout:g} s and was stopped: {hint}; "
                "narrow the search with path or include, or simplify the pattern."
            )
        error = answer.get("error")
        if isinstance(error, str):
            raise ToolError(error)
        return answer

    # -- edit ---------------------------------------------------------------

    def _write_file(self, fence: Fence, args: dict[str, Any]) -> ToolResult:
        return self._apply(fence, self.plan_change(fence, "write_file", args))

    def _edit(self, fence: Fence, args: dict[str, Any]) -> ToolResult:
        return self._apply(fence, self.plan_change(fence, "edit", args))

    def _apply(self, fence: Fence, change: FileChange) -> ToolResult:
        fence.write(change.path, change.data, expected=change.pre_hash, parents=True)
        return change.result

    def fence(self) -> Fence | None:
        """The workspace's fence (None when the workspace does not exist)."""
        return fence_of(self.workspace, self.data_dir)

    def target(self, fence: Fence, invocation: ToolCall) -> Path:
        """The file a `write_file` / `edit` call writes, resolved inside the workspace."""
        return writable(fence, required_str(invocation.arguments, "file_path"))

    def plan_change(self, fence: Fence, tool_name: str, args: dict[str, Any]) -> FileChange:
        """What `write_file` or `edit` would write, from the file as it is now (no write).

        The same text handling as POST /file/write and /file/edit: an existing file keeps
        its encoding, BOM and line endings; a binary file cannot be edited."""
        path = writable(fence, required_str(args, "file_path"))
        raw = read_existing_bytes(fence, path)
        profile: TextProfile | None = None
        old: str | None = None
        if raw is not None:
            try:
                old, profile = decode(raw)
            except NotText:
                if tool_name == "edit":
                    raise ToolError(f"Cannot edit binary file: {relative(fence, path)}") from None
                old = raw.decode("utf-8", errors="replace")
        if tool_name == "write_file":
            new = required_str(args, "content", allow_empty=True)
            text = (
                f"Successfully created and wrote to new file: {path}."
                if old is None
                else f"Successfully overwrote file: {path}."
            )
        else:
            new, replaced = edited(fence, path, old, args)
            text = (
                f"Created new file: {path}."
                if old is None
                else f"Successfully modified file: {path} ({replaced} replacement(s))."
            )
        result = ToolResult(
            status="completed",
            output_text=self._bound(text),
            content=[diff_item(path, old or "", new)],
            locations=[{"path": str(path)}],
        )
        pre_hash = ABSENT if raw is None else content_hash(raw)
        if profile is None:  # a new file (or a binary one rewritten): the text as given
            data = encode(new, TextProfile(line_ending=line_ending_of(new)))
        else:
            data = encode(normalize(new) if profile.line_ending == "crlf" else new, profile)
        return FileChange(path=path, pre_hash=pre_hash, new=new, data=data, result=result)

    # -- execute ------------------------------------------------------------

    async def _shell(self, fence: Fence, args: dict[str, Any]) -> ToolResult:
        root = fence.root
        if not self.shell_enabled:
            raise ToolError("run_shell_command is disabled on this daemon.")
        command = required_str(args, "command")
        if not command.strip():
            raise ToolError("Invalid arguments: command is required.")
        process = await asyncio.create_subprocess_shell(
            command,
            cwd=root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=_shell_env(root),
            start_new_session=True,
            # The worker runs under umask 077 (its own state is private); what a command
            # creates in the workspace is the user's, with the user's usual modes.
            umask=WORKSPACE_UMASK,
        )
        kept = bytearray()
        total = 0

        async def drain() -> None:
            nonlocal total
            assert process.stdout is not None
            while chunk := await process.stdout.read(65536):
                total += len(chunk)
                room = self.max_output_bytes - len(kept)
                if room > 0:
                    kept.extend(chunk[:room])

        timed_out = False
        try:
            await asyncio.wait_for(asyncio.gather(drain(), process.wait()), self.shell_timeout)
        except TimeoutError:
            timed_out = True
        finally:
            # The whole group: a timed-out command, a cancelled activity, and whatever
            # the command left running in the background.
            kill_group(process.pid)
            if process.returncode is None:
                await process.wait()
        output = kept.decode("utf-8", errors="replace")
        if total > len(kept):
            output += f"\n[... output truncated: {total} bytes]"
        code = process.returncode
        lines = [
            f"Command: {command}",
            "Directory: (root)",
            f"Output: {output.rstrip() or '(empty)'}",
        ]
        if timed_out:
            message = f"Command timed out after {self.shell_timeout:g}s and was killed."
            text = self._bound("\n".join([*lines, f"Error: {message}"]))
            return ToolResult(
                status="failed", output_text=text, content=[text_item(text)], error=message
            )
        if code is not None and code < 0:
            lines.append(f"Signal: {-code}")
        lines.append(f"Exit Code: {code}")
        text = self._bound("\n".join(lines))
        return ToolResult(status="completed", output_text=text, content=[text_item(text)])

    def _bound(self, text: str) -> str:
        return bound(text, self.max_output_bytes)


def shell_search_path() -> str:
    """The `PATH` the shell tool runs commands with (the fence checks it too)."""
    return os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")


def _lstat(fence: Fence, path: Path) -> os.stat_result | None:
    """The stat of a checked path through the fence, None when it does not exist."""
    try:
        return fence.lstat(path)
    except FileError as err:
        if err.kind == "path_not_found":
            return None
        raise


def _is_directory(fence: Fence, parent: Path, name: str, kind: str) -> bool:
    if kind != "symlink":
        return kind == "directory"
    real = Path(os.path.realpath(parent / name))
    return fence.contains(real) and real.is_dir()


def _search_scope(fence: Fence, base: Path) -> dict[str, str | None]:
    """Where a search child walks: the fence's root and data dir, from `base`."""
    return {
        "root": str(fence.root),
        "base": str(base),
        "data_dir": None if fence.data_dir is None else str(fence.data_dir),
    }


def _shown_argument(args: dict[str, Any]) -> str:
    """The path argument of a call, as a refusal names it."""
    for key in ("absolute_path", "file_path", "path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return "."


def _shell_env(cwd: Path) -> dict[str, str]:
    """A minimal environment: the worker's secrets (API keys, tokens) stay out."""
    env = {
        "PATH": shell_search_path(),
        "HOME": os.environ.get("HOME", str(cwd)),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PWD": str(cwd),
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env
