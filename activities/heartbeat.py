"""Heartbeating around a slow call, shared by every activity that can run long."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")
HEARTBEAT_EVERY = 2.0


async def heartbeating(call: Awaitable[T], every: float = HEARTBEAT_EVERY) -> T:
    """Await `call` while heartbeating, so a lost worker's attempt is retried after the
    heartbeat timeout (seconds) rather than the whole start-to-close timeout.

    Outside a regular activity (a local activity, or no activity at all) it just awaits.
    """
    if not activity.in_activity() or activity.info().is_local:
        return await call

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    beating = asyncio.create_task(beat())
    try:
        return await call
    finally:
        beating.cancel()
