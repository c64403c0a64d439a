"""The fallback chain's overhead per attempt, against a direct provider call.

Everything runs against a real OpenAI-compatible endpoint on loopback
(`bench.llm_provider`, the cheapest provider call there can be, so the overhead is not
hidden behind a model's latency) and a temp SQLite store holding the routing config:

(a) a direct call: `OpenAIProvider.complete`, in process;
(b) one gateway attempt, in process: provider config read, credential resolved, the
    stored-success check, the attempt row in flight then finished, pricing, the reply
    stored — quoted against (a);
(c) a workflow making the call directly from one activity (no chain): the baseline of
(d) the same call through the chain: `llm.resolve_chain` (local activity), then one
    attempt activity through the gateway — quoted against (c);
(e) a chain call of two attempts (the first key rate-limited, 429 without Retry-After,
    so the chain rotates at once) — quoted against (d): (e) − (d) is one more attempt.

The dev server runs with the transfer-queue poll limit lifted (TUNED_DEV_SERVER_ARGS) so
the figures show the chain, not the stock server's limiter.
"""

from __future__ import annotations

import itertools
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from temporalio.worker import Worker

from activities.llm.gateway import LlmOwner, ModelGateway
from activities.llm.openai import OpenAIProvider
from activities.llm.routing_activities import LlmActivities
from bench.llm_chain_workflows import (
    CHAIN_WORKFLOW,
    DIRECT_WORKFLOW,
    HELLO,
    WORKFLOWS,
    BenchLlmActivities,
    CallInput,
    CallResult,
)
from bench.llm_provider import BUSY_KEY, GOOD_KEY, LoopbackProvider
from bench.report import BenchOptions, Figure, Report, elapsed_ms, sample
from bench.substrate import TUNED_DEV_SERVER_ARGS, start_dev_server
from runtime.llm import config_store
from runtime.llm.contracts import AttemptSpec, CredentialConfig, OwnerKind
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from worker import workflow_runner

ONE_ATTEMPT_SITE = "Agent:Compliance"
TWO_ATTEMPTS_SITE = "PromptRedactor:Redact"


def _configure(store: Store, settings: Settings, base_url: str) -> None:
    now = datetime.now(UTC)
    good = CredentialConfig(alias="good", apiKey=GOOD_KEY)
    busy = CredentialConfig(alias="busy", apiKey=BUSY_KEY)
    config_store.put_provider(store, settings, "pa", base_url, [good], now)
    config_store.put_provider(store, settings, "pb", base_url, [busy, good], now)
    config_store.put_preset(store, settings, "one", "bench", "pa", None, [], now)
    config_store.put_preset(store, settings, "two", "bench", "pb", None, [], now)
    config_store.bind_site(store, settings, ONE_ATTEMPT_SITE, "one", now)
    config_store.bind_site(store, settings, TWO_ATTEMPTS_SITE, "two", now)


def _timed(call: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        started = time.perf_counter()
        await call()
        return elapsed_ms(started)

    return run


async def benchmark(options: BenchOptions) -> Report:
    runs, warmup = options.runs, options.warmup
    with tempfile.TemporaryDirectory() as tmp, LoopbackProvider() as endpoint:
        settings = Settings(data_dir=Path(tmp), workspace=Path(tmp))
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        _configure(store, settings, endpoint.base_url)
        gateway = ModelGateway(store, settings)
        ids = itertools.count()

        direct = OpenAIProvider(base_url=endpoint.base_url, model="bench", api_key=GOOD_KEY)
        direct_ms = await sample(
            _timed(lambda: direct.complete(HELLO, [])), runs=runs, warmup=warmup
        )

        async def one_attempt() -> object:
            spec = AttemptSpec(
                call_id=f"bench/{next(ids)}",
                attempt_index=0,
                site=ONE_ATTEMPT_SITE,
                preset_id="one",
                fallback_step=0,
                provider="pa",
                credential_alias="good",
                model="bench",
            )
            return await gateway.attempt(spec, LlmOwner(OwnerKind.TURN, "bench", None), HELLO, [])

        attempt_ms = await sample(_timed(one_attempt), runs=runs, warmup=warmup)

        env = await start_dev_server(TUNED_DEV_SERVER_ARGS)
        task_queue = f"bench-llm-{uuid.uuid4().hex[:12]}"
        bench = BenchLlmActivities(gateway, endpoint.base_url, GOOD_KEY)
        async with (
            env,
            Worker(
                env.client,
                task_queue=task_queue,
                workflows=WORKFLOWS,
                activities=[
                    bench.direct_call,
                    bench.chain_attempt,
                    LlmActivities(store, settings).resolve_chain,
                ],
                workflow_runner=workflow_runner(),
            ),
        ):

            def call(workflow: str, site: str, attempts: int) -> Callable[[], Awaitable[float]]:
                async def run() -> float:
                    call_id = f"bench/{next(ids)}"
                    started = time.perf_counter()
                    result: CallResult = await env.client.execute_workflow(
                        workflow,
                        CallInput(call_id=call_id, site=site),
                        id=call_id,
                        task_queue=task_queue,
                        result_type=CallResult,
                    )
                    took = elapsed_ms(started)
                    if result.attempts != attempts:
                        raise RuntimeError(f"{attempts} attempts expected, {result.attempts} made")
                    return took

                return run

            workflow_direct = await sample(
                call(DIRECT_WORKFLOW, ONE_ATTEMPT_SITE, 1), runs=runs, warmup=warmup
            )
            chain_one = await sample(
                call(CHAIN_WORKFLOW, ONE_ATTEMPT_SITE, 1), runs=runs, warmup=warmup
            )
            chain_two = await sample(
                call(CHAIN_WORKFLOW, TWO_ATTEMPTS_SITE, 2), runs=runs, warmup=warmup
            )
        store.dispose()
    a = Figure("(a) direct provider call (in process)", direct_ms)
    b = Figure("(b) one gateway attempt (in process)", attempt_ms).against(a)
    c = Figure("(c) workflow: direct call in 1 activity", workflow_direct)
    d = Figure("(d) workflow: chain call, 1 attempt", chain_one).against(c)
    e = Figure("(e) workflow: chain call, 2 attempts", chain_two).against(d)
    per_attempt = e.summary.median - d.summary.median
    return Report(
        title=f"Model-call chain overhead ({runs} runs, {warmup} warm-up)",
        figures=(a, b, c, d, e),
        notes=(
            f"Gateway bookkeeping per attempt (b − a, medians): "
            f"{b.summary.median - a.summary.median:.2f} ms.",
            f"The chain in a workflow (d − c): {d.summary.median - c.summary.median:.2f} ms "
            "(the plan's local activity and the attempt's bookkeeping).",
            f"One more attempt in a workflow (e − d): {per_attempt:.2f} ms.",
            "Loopback OpenAI-compatible endpoint (bench/llm_provider.py); temp SQLite "
            "store; dev server with TUNED_DEV_SERVER_ARGS; worker and client in this process.",
        ),
    )
