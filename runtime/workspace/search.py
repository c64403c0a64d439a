"""Searches (`glob`, `grep`) in a child interpreter killed at the call's time bound: the
agent's `glob` and `grep_search` tools and the daemon's GET /glob share it, so no pattern
can hold the worker's or the API's interpreter (see `runtime.workspace.search_child`)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, Final

from runtime.workspace import search_child

SEARCH_TIMEOUT_SECONDS: Final = 30.0  # one whole glob or grep_search call
SEARCH_SCRIPT: Final = Path(search_child.__file__)


class SearchFailed(Exception):
    """The child failed (not a time-out): its message is what callers show."""


async def run_search(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """The answer of `runtime.workspace.search_child` to `request`, or None when it ran past
    `timeout` seconds (it is killed then, and when the caller is cancelled)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",  # no PYTHON* variables, user site or script directory: the stdlib only
        str(SEARCH_SCRIPT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
        start_new_session=True,
    )
    payload = json.dumps({**request, "timeout": timeout}).encode()
    try:
        out, err = await asyncio.wait_for(process.communicate(payload), timeout)
    except TimeoutError:
        return None
    finally:
        kill_group(process.pid)
        if process.returncode is None:
            await process.wait()
    if process.returncode != 0:
        if process.returncode == -signal.SIGXCPU:
            return None  # its own CPU bound stopped it
        lines = err.decode("utf-8", errors="replace").strip().splitlines()
        raise SearchFailed(
            f"The search failed (exit code {process.returncode})"
            + (f": {lines[-1]}" if lines else ".")
        )
    try:
        answer = json.loads(out)
    except ValueError as error:
        raise SearchFailed(f"The search failed: unreadable answer ({error}).") from error
    if not isinstance(answer, dict):
        raise SearchFailed("The search failed: unreadable answer.")
    return answer


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
