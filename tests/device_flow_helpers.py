"""Fault injection for a model call paused on a device flow: reads of the flow's state
that hang, as when no worker answers the query they wait on (a worker shutting down)."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity, client, worker

from runtime.device_flow.contracts import DeviceFlowActivity


class HangReads(client.Interceptor, worker.Interceptor):
    """Once `hang` is set, the pause's reads of the flow's state never return; `hung` is
    set when one is in flight. On a client, so the workers built on it use it."""

    def __init__(self) -> None:
        self.hang = asyncio.Event()
        self.hung = asyncio.Event()

    def intercept_activity(
        self, next: worker.ActivityInboundInterceptor
    ) -> worker.ActivityInboundInterceptor:
        return _HangingRead(next, self)

    def client(self, base: client.Client) -> client.Client:
        """`base`'s connection, with these reads."""
        config = base.config()
        config["interceptors"] = [*config["interceptors"], self]
        return client.Client(**config)


class _HangingRead(worker.ActivityInboundInterceptor):
    def __init__(self, next: worker.ActivityInboundInterceptor, owner: HangReads) -> None:
        super().__init__(next)
        self.owner = owner

    async def execute_activity(self, input: worker.ExecuteActivityInput) -> Any:
        if activity.info().activity_type == DeviceFlowActivity.READ and self.owner.hang.is_set():
            self.owner.hung.set()
            await asyncio.Future()  # until the worker's shutdown cancels it
        return await super().execute_activity(input)
