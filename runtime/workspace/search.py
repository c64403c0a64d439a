"""Searches (`glob`, `grep`) in a child interpreter killed at the call's time bound: the
agent's `glob` and `grep_search` tools and the daemon's GET /glob share it, so no pattern
can hold the worker's or the API's interpreter (see `runtime.workspace.search_child`).

A process runs at most `limit` children at once (`search_children`, default 4): one
child is a whole interpreter (up to 2 GiB of address space and a CPU for 30 s), so a
client looping GET /glob must not fork without bound. Over the cap, a caller that cannot
wait (an HTTP route) gets `SearchBusy` at once (429 with Retry-After); a session's tool
call waits for a slot within its own time bound.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Final, Literal

from runtime.failures import WireError
from runtime.workspace import search_child

SEARCH_TIMEOUT_SECONDS: Final = 30.0  # one whole glob or grep_search call
SEARCH_SCRIPT: Final = Path(search_child.__file__)
DEFAULT_SEARCH_CHILDREN: Final = 4
BUSY_RETRY_AFTER_SECONDS: Final = 1
_SLOT_POLL_SECONDS: Final = 0.05


class SearchesBusy(WireError):
    """The refusal of a search over the cap: the rate limiter's 429 shape
    (api/security/ratelimit.py), tier `search`."""

    kind: Literal["rate_limit_exceeded"] = "rate_limit_exceeded"
    limit: int
    retry_after: int = BUSY_RETRY_AFTER_SECONDS

    @property
    def http_status(self) -> int:
        return 429

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Too many searches in progress (at most {self.limit} at once)",
            "code": self.kind_name,
            "tier": "search",
            "limit": self.limit,
            "retryAfterMs": self.retry_after * 1000,
        }

    def response_headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class SearchBusy(Exception):
    """Every search slot of this process is taken."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} searches are already running in this process")
        self.limit = limit
        self.retry_after = BUSY_RETRY_AFTER_SECONDS

    def refusal(self) -> SearchesBusy:
        return SearchesBusy(limit=self.limit, retry_after=self.retry_after)


class _Slots:
    """The search children this process runs now (a counter: the cap is each caller's)."""

    def __init__(self) -> None:
        self.running = 0
        self._guard = threading.Lock()

    def take(self, limit: int) -> bool:
        with self._guard:
            if self.running >= limit:
                return False
            self.running += 1
            return True

    def give(self) -> None:
        with self._guard:
            self.running -= 1


SLOTS: Final = _Slots()


class SearchFailed(Exception):
    """The child failed (not a time-out): its message is what callers show."""


async def run_search(
    request: dict[str, Any],
    timeout: float,
    *,
    limit: int = DEFAULT_SEARCH_CHILDREN,
    wait: bool = False,
) -> dict[str, Any] | None:
    """The answer of `runtime.workspace.search_child` to `request`, or None when it ran past
    `timeout` seconds (it is killed then, and when the caller is cancelled).

    At most `limit` children of this process run at once: over it, `SearchBusy` at once,
    or with `wait`, once no slot freed within `timeout` (the time waited counts)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not SLOTS.take(limit):
        if not wait or loop.time() >= deadline:
            raise SearchBusy(limit)
        await asyncio.sleep(_SLOT_POLL_SECONDS)
    try:
        return await _run_child(request, max(deadline - loop.time(), 0.001))
    finally:
        SLOTS.give()


async def _run_child(request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
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
