"""The smallest workflows and activity that exercise each Temporal primitive agentrt uses.

They do no work of their own, so what is measured is the substrate: the server round trips,
history writes, task dispatch to the worker and the pydantic data converter. Workflow code
here follows the house rules (deterministic, no I/O, no clock).
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio import activity, workflow


class Ping(BaseModel):
    """A tiny pydantic payload, because agentrt's payloads are pydantic models too."""

    seq: int


class Pong(BaseModel):
    seq: int


@activity.defn
async def echo_activity(ping: Ping) -> Pong:
    return Pong(seq=ping.seq)


ACTIVITY_TIMEOUT = timedelta(seconds=30)


@workflow.defn
class EmptyWorkflow:
    """Returns at once: the cost of start → first workflow task → completion → result."""

    @workflow.run
    async def run(self, ping: Ping) -> Pong:
        return Pong(seq=ping.seq)


@workflow.defn
class SignalWorkflow:
    """Blocks until `release` is signalled, then completes with the signalled value."""

    def __init__(self) -> None:
        self.released: Ping | None = None

    @workflow.run
    async def run(self) -> Pong:
        await workflow.wait_condition(lambda: self.released is not None)
        assert self.released is not None
        return Pong(seq=self.released.seq)

    @workflow.signal
    def release(self, ping: Ping) -> None:
        self.released = ping

    @workflow.query
    def waiting(self) -> bool:
        # A query answered by the worker proves the first workflow task ran, i.e. the
        # workflow is parked in wait_condition before the timed signal is sent.
        return self.released is None


@workflow.defn
class UpdateWorkflow:
    """A long-running workflow taking updates until `finish` is signalled."""

    def __init__(self) -> None:
        self.finished = False

    @workflow.run
    async def run(self) -> None:
        # Drain in-flight update handlers before completing, as agentrt's workflows must.
        await workflow.wait_condition(lambda: self.finished and workflow.all_handlers_finished())

    @workflow.signal
    def finish(self) -> None:
        self.finished = True

    @workflow.update
    async def echo(self, ping: Ping) -> Pong:
        return Pong(seq=ping.seq)

    @workflow.update
    async def echo_via_activity(self, ping: Ping) -> Pong:
        return await workflow.execute_activity(
            echo_activity, ping, start_to_close_timeout=ACTIVITY_TIMEOUT
        )

    @workflow.update
    async def echo_via_local_activity(self, ping: Ping) -> Pong:
        return await workflow.execute_local_activity(
            echo_activity, ping, start_to_close_timeout=ACTIVITY_TIMEOUT
        )


WORKFLOWS = [EmptyWorkflow, SignalWorkflow, UpdateWorkflow]
ACTIVITIES = [echo_activity]
