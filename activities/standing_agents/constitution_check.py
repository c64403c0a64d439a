"""The constitution check, bounded in time, off the worker's event loop.

CPython's regex engine holds the GIL for a whole search, so a thread would not
free the event loop during a catastrophic pattern: every workflow on the worker
would stall. The check runs in a child process instead; one that runs over its
time is killed (with its pool, replaced on the next check) and the call is
blocked, fail-closed.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from runtime.standing_agents.constitution import ConstitutionRule, violations


class ConstitutionChecker:
    """One per activities object (its lock belongs to one event loop)."""

    def __init__(self, max_workers: int = 2) -> None:
        self._max_workers = max_workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock: asyncio.Lock | None = None

    async def check(
        self,
        rules: list[ConstitutionRule],
        tool: str,
        arguments: Mapping[str, Any],
        timeout_s: float,
    ) -> list[str] | None:
        """The violated rule ids; None when the check did not finish within `timeout_s`."""
        if not rules:
            return []
        pool = await self._ready()
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(pool, violations, rules, tool, dict(arguments)),
                timeout=timeout_s,
            )
        except (TimeoutError, BrokenProcessPool):
            self._discard(pool)
            return None

    async def _ready(self) -> ProcessPoolExecutor:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._pool is None:
                # spawn: the worker process has threads, which fork must not copy.
                pool = ProcessPoolExecutor(
                    max_workers=self._max_workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    # Each process imports the check before it takes one: a process
                    # the pool starts again later (after a kill) never spends a check's
                    # time bound importing the rules' module and its package.
                    initializer=violations,
                    initargs=([], "", {}),
                )
                # Start every process (interpreter, imports) outside any check's time
                # bound: warm-ups sent together make the pool start one process each.
                loop = asyncio.get_running_loop()
                await asyncio.gather(
                    *(
                        loop.run_in_executor(pool, violations, [], "", {})
                        for _ in range(self._max_workers)
                    )
                )
                self._pool = pool
            return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        if self._pool is pool:
            self._pool = None
        # A process cannot be asked to stop a search: it is killed.
        processes = getattr(pool, "_processes", None) or {}
        for process in list(processes.values()):
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
