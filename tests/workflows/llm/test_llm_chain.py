"""The fallback chain on Temporal's time-skipping server, against real HTTP on loopback.

A probe workflow resolves its site's plan with the real `llm.resolve_chain` and walks it
with `run_chain`, each attempt one activity through the real gateway; FakeOpenAI answers
per API key. The standing agent's own use of the chain is tested end to end below.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Sum
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.llm.gateway import LlmOwner, ModelGateway
from activities.llm.routing_activities import LlmActivities
from runtime.llm import config_store
from runtime.llm.contracts import (
    ALL_PROVIDERS_EXHAUSTED,
    MODEL_BAD_REQUEST,
    AttemptReport,
    AttemptSpec,
    ChainEntry,
    ChainFailure,
    ChatMessage,
    CredentialConfig,
    OwnerKind,
)
from runtime.settings import Settings
from runtime.store import Store
from tests.fakes.openai_server import FakeOpenAI, FakeReply
from tests.workflows import standing_agent_support as sa
from tests.workflows.standing_agent_support import agent_env
from worker import workflow_runner
from workflows.llm.chain import ATTEMPT_RETRY, chain_failure, resolve_chain, run_chain

__all__ = ["agent_env"]

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SITE = "Agent:Compliance"
PROBE_ATTEMPT = "test.chain_probe_attempt"
ANSWERS = {
    "k-busy": FakeReply(status=429, retry_after="1"),
    "k-busy-long": FakeReply(status=429, retry_after="3600"),
    "k-revoked": FakeReply(status=401),
    "k-down": FakeReply(status=503),
    "k-refused": FakeReply(status=400, error_message="bad request"),
    "k-good": FakeReply(content="fine", model="served-b", usage=(10, 5)),
}

# The process's meter provider can be set once: the counters' proxy meter, made at import
# of runtime.llm.metrics, forwards to it. Tests compare counts before and after.
_reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[_reader]))


class ProbeResult(BaseModel):
    attempts: list[AttemptReport] = []
    error_type: str | None = None
    error: str | None = None


@workflow.defn(name="ChainProbe")
class ChainProbe:
    @workflow.run
    async def run(self, call_id: str) -> ProbeResult:
        plan = await resolve_chain(SITE)

        async def attempt(spec: AttemptSpec) -> AttemptReport:
            report: AttemptReport = await workflow.execute_activity(
                PROBE_ATTEMPT,
                spec,
                result_type=AttemptReport,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=ATTEMPT_RETRY,
            )
            return report

        try:
            done = await run_chain(plan, call_id, attempt)
        except ApplicationError as err:
            failure = chain_failure(err) or ChainFailure(attempts=[])
            return ProbeResult(attempts=failure.attempts, error_type=err.type, error=err.message)
        return ProbeResult(attempts=done.attempts)


class ProbeActivities:
    def __init__(self, gateway: ModelGateway) -> None:
        self.gateway = gateway

    @activity.defn(name=PROBE_ATTEMPT)
    async def attempt(self, spec: AttemptSpec) -> AttemptReport:
        owner = LlmOwner(OwnerKind.TURN, "t1", "/ws")
        hello = [ChatMessage(role="user", content="hello")]
        report, _ = await self.gateway.attempt(spec, owner, hello, [])
        return report


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        for key, reply in ANSWERS.items():
            server.answer_key(key, reply)
        yield server


def _configure(
    store: Store, settings: Settings, fake: FakeOpenAI, site: str, providers: dict[str, list[str]]
) -> None:
    """Providers named by their keys, and a preset over them in order, bound to `site`."""
    for provider_id, keys in providers.items():
        credentials = [CredentialConfig(alias=k.removeprefix("k-"), apiKey=k) for k in keys]
        config_store.put_provider(store, settings, provider_id, fake.base_url, credentials, NOW)
    (first, *rest) = providers
    fallback = [ChainEntry(model=f"model-{p}", provider=p) for p in rest]
    config_store.put_preset(store, settings, "chain", f"model-{first}", first, None, fallback, NOW)
    config_store.bind_site(store, settings, site, "chain", NOW)


async def _probe(
    env: WorkflowEnvironment, store: Store, settings: Settings, task_queue: str, call_id: str
) -> ProbeResult:
    probe = ProbeActivities(ModelGateway(store, settings))
    async with Worker(
        env.client,
        task_queue=task_queue,
        workflows=[ChainProbe],
        activities=[LlmActivities(store, settings).resolve_chain, probe.attempt],
        workflow_runner=workflow_runner(),
    ):
        result: ProbeResult = await env.client.execute_workflow(
            ChainProbe.run, call_id, id=f"probe/{call_id}", task_queue=task_queue
        )
    return result


def _counter(name: str) -> int:
    data = _reader.get_metrics_data()
    total = 0
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name and isinstance(metric.data, Sum):
                    total += sum(int(point.value) for point in metric.data.data_points)
    return total


def _outcomes(result: ProbeResult) -> list[tuple[str, str | None, str]]:
    return [(a.provider, a.credential_alias, a.outcome.value) for a in result.attempts]


@pytest.fixture
def settings(tmp_path: Path, task_queue: str) -> Settings:
    return Settings(data_dir=tmp_path, workspace=tmp_path, task_queue=task_queue)


async def test_a_rate_limited_key_rotates_to_the_next_key_of_the_provider(
    agent_env: WorkflowEnvironment,
    store: Store,
    settings: Settings,
    fake: FakeOpenAI,
    task_queue: str,
) -> None:
    _configure(store, settings, fake, SITE, {"pa": ["k-busy", "k-revoked", "k-good"]})
    advances = _counter("subagent.llm_call.fallback_advance")
    result = await _probe(agent_env, store, settings, task_queue, "rotate")
    assert result.error_type is None
    assert _outcomes(result) == [
        ("pa", "busy", "rate_limited"),
        ("pa", "revoked", "auth_error"),
        ("pa", "good", "ok"),
    ]
    assert [r.authorization for r in fake.requests] == [
        "Bearer k-busy",
        "Bearer k-revoked",
        "Bearer k-good",
    ]
    assert _counter("subagent.llm_call.fallback_advance") == advances  # same entry


async def test_a_server_error_advances_to_the_next_entry(
    agent_env: WorkflowEnvironment,
    store: Store,
    settings: Settings,
    fake: FakeOpenAI,
    task_queue: str,
) -> None:
    # The down provider's second key is never tried: a 5xx moves on to the next entry.
    _configure(store, settings, fake, SITE, {"pa": ["k-down", "k-busy"], "pb": ["k-good"]})
    advances = _counter("subagent.llm_call.fallback_advance")
    result = await _probe(agent_env, store, settings, task_queue, "advance")
    assert _outcomes(result) == [("pa", "down", "server_error"), ("pb", "good", "ok")]
    assert result.attempts[-1].served_model == "served-b"
    assert [r.body["model"] for r in fake.requests] == ["model-pa", "model-pb"]
    assert _counter("subagent.llm_call.fallback_advance") == advances + 1


async def test_a_bad_request_ends_the_chain_at_once(
    agent_env: WorkflowEnvironment,
    store: Store,
    settings: Settings,
    fake: FakeOpenAI,
    task_queue: str,
) -> None:
    _configure(store, settings, fake, SITE, {"pa": ["k-refused", "k-good"], "pb": ["k-good"]})
    result = await _probe(agent_env, store, settings, task_queue, "refused")
    assert result.error_type == MODEL_BAD_REQUEST
    assert _outcomes(result) == [("pa", "refused", "bad_request")]
    assert len(fake.requests) == 1


async def test_exhaustion_names_every_attempt(
    agent_env: WorkflowEnvironment,
    store: Store,
    settings: Settings,
    fake: FakeOpenAI,
    task_queue: str,
) -> None:
    _configure(store, settings, fake, SITE, {"pa": ["k-busy-long", "k-revoked"], "pb": ["k-down"]})
    exhausted = _counter("subagent.llm_call.all_providers_exhausted")
    result = await _probe(agent_env, store, settings, task_queue, "exhausted")
    assert result.error_type == ALL_PROVIDERS_EXHAUSTED
    assert _outcomes(result) == [
        ("pa", "busy-long", "rate_limited"),
        ("pa", "revoked", "auth_error"),
        ("pb", "down", "server_error"),
    ]
    assert result.error == (
        "all model providers failed: pa/busy-long: rate_limited (429); "
        "pa/revoked: auth_error (401); pb/down: server_error (503)"
    )
    assert result.attempts[0].retry_after_s == 3600.0  # too long to wait: rotated at once
    assert _counter("subagent.llm_call.all_providers_exhausted") == exhausted + 1


async def test_a_standing_agent_falls_back_when_its_provider_is_rate_limited(
    agent_env: WorkflowEnvironment, store: Store, fake: FakeOpenAI, task_queue: str, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, workspace=tmp_path)
    fake.answer_key(
        "k-plan",
        FakeReply(
            tool_calls=[{"name": "phase_complete", "arguments": {"summary": "all good"}}],
            finish_reason="tool_calls",
            model="served-b",
            usage=(100, 10),
        ),
    )
    _configure(store, settings, fake, "Agent:Planning", {"pa": ["k-busy"], "pb": ["k-plan"]})
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        (turn,) = sa.turns(store, agent)
        assert turn.served_model == "served-b"
        attempts = sorted(sa.llm_attempts(store, agent), key=lambda a: a.ordinal)
        assert [(a.provider, a.outcome, a.fallback_step) for a in attempts] == [
            ("pa", "rate_limited", 0),
            ("pb", "ok", 1),
        ]
        assert {a.call_id for a in attempts} == {turn.llm_call_id}
        assert all(a.site == "Agent:Planning" and a.preset_id == "chain" for a in attempts)
        await sa.stop(handle)


async def test_a_standing_agent_whose_providers_all_fail_records_a_blocked_turn(
    agent_env: WorkflowEnvironment, store: Store, fake: FakeOpenAI, task_queue: str, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, workspace=tmp_path)
    _configure(store, settings, fake, "Agent:Default", {"pa": ["k-down"], "pb": ["k-revoked"]})
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        (turn,) = sa.turns(store, agent)
        assert turn.wait_condition == "blocked: all_providers_exhausted"
        assert turn.reasoning_summary == (
            "all model providers failed: pa/down: server_error (503); pb/revoked: auth_error (401)"
        )
        assert [a.outcome for a in sa.llm_attempts(store, agent)] == ["server_error", "auth_error"]
        # Alive: its next event is ticked as usual.
        description = await handle.describe()
        assert description.status is not None and description.status.name == "RUNNING"
        assert len(sa.pending_ticks(store, agent)) == 1
        await sa.stop(handle)
