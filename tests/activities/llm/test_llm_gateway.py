"""The model gateway: one attempt, classified and recorded, against real HTTP on loopback.

One FakeOpenAI stands for a provider whose credentials answer differently (per API key):
429 with Retry-After, 401, 403, 500, 400, and a good key whose answer names a served
model other than the requested one, with usage, so the cost arithmetic is checked
against a stored price.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlmodel import col, select

from activities.llm import record
from activities.llm.gateway import LlmOwner, ModelGateway
from activities.llm.openai import retry_after_s
from runtime.device_flow.providers import QWEN_OAUTH, credentials_path
from runtime.llm import config_store
from runtime.llm.attempt_log import IN_FLIGHT
from runtime.llm.contracts import (
    AttemptOutcome,
    AttemptSpec,
    ChatMessage,
    CredentialConfig,
    Overlay,
    OwnerKind,
    PriceSource,
    UsageSource,
)
from runtime.llm.models import LlmCall, LlmCallAttempt
from runtime.llm.pricing import Price, cost_usd, price_for, put_price
from runtime.llm.reservation import SpendRefusal, SpendRefused
from runtime.settings import Settings
from runtime.store import Store
from tests.fakes.openai_server import FakeOpenAI, FakeReply

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OWNER = LlmOwner(OwnerKind.SESSION, "s1", "/ws")
HELLO = [ChatMessage(role="user", content="hello")]
GOOD = FakeReply(content="hi there", model="served-x-2026", usage=(1_000_000, 500_000))
ANSWERS = {
    "k-busy": FakeReply(status=429, retry_after="2"),
    "k-revoked": FakeReply(status=401),
    "k-forbidden": FakeReply(status=403),
    "k-down": FakeReply(status=500),
    "k-refused": FakeReply(status=400, error_message="max_tokens is too large"),
    "k-good": GOOD,
}


# The process's tracer provider can be set once; the gateway's proxy tracer forwards to it.
_spans = InMemorySpanExporter()
_provider_set = TracerProvider()
_provider_set.add_span_processor(SimpleSpanProcessor(_spans))
trace.set_tracer_provider(_provider_set)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        for key, reply in ANSWERS.items():
            server.answer_key(key, reply)
        yield server


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, workspace=tmp_path)


def _provider(store: Store, settings: Settings, fake: FakeOpenAI, *credentials: str) -> None:
    config_store.put_provider(
        store,
        settings,
        "p1",
        fake.base_url,
        [CredentialConfig(alias=key.removeprefix("k-"), apiKey=key) for key in credentials],
        NOW,
    )


def _spec(alias: str | None, *, call_id: str = "call-1", index: int = 0) -> AttemptSpec:
    return AttemptSpec(
        call_id=call_id,
        attempt_index=index,
        site="Session:Default",
        preset_id="fast",
        fallback_step=0,
        provider="p1",
        credential_alias=alias,
        model="cheap-alias",
    )


def _attempts(store: Store, call_id: str = "call-1") -> list[LlmCallAttempt]:
    with store.session() as db:
        rows = db.exec(
            select(LlmCallAttempt)
            .where(col(LlmCallAttempt.call_id) == call_id)
            .order_by(col(LlmCallAttempt.ordinal))
        )
        return list(rows)


def _call(store: Store, call_id: str = "call-1") -> LlmCall | None:
    with store.session() as db:
        return db.get(LlmCall, call_id)


@pytest.mark.parametrize(
    ("key", "outcome", "status"),
    [
        ("k-busy", AttemptOutcome.RATE_LIMITED, 429),
        ("k-revoked", AttemptOutcome.AUTH_ERROR, 401),
        ("k-forbidden", AttemptOutcome.AUTH_ERROR, 403),
        ("k-down", AttemptOutcome.SERVER_ERROR, 500),
        ("k-refused", AttemptOutcome.BAD_REQUEST, 400),
    ],
)
async def test_a_failed_attempt_is_classified_and_recorded(
    store: Store,
    settings: Settings,
    fake: FakeOpenAI,
    key: str,
    outcome: AttemptOutcome,
    status: int,
) -> None:
    _provider(store, settings, fake, key)
    alias = key.removeprefix("k-")
    report, reply = await ModelGateway(store, settings).attempt(_spec(alias), OWNER, HELLO, [])
    assert reply is None
    assert report.outcome is outcome and report.http_status == status
    assert report.provider == "p1" and report.credential_alias == alias
    assert report.attempt_id == "call-1/a0"
    assert report.retry_after_s == (2.0 if status == 429 else None)
    assert key not in (report.error or "")  # the key never reaches a report
    (row,) = _attempts(store)
    assert (row.outcome, row.http_status, row.credential_alias) == (outcome.value, status, alias)
    assert (row.owner_kind, row.owner_id, row.tenant) == ("session", "s1", "/ws")
    assert (row.preset_id, row.site, row.requested_model) == (
        "fast",
        "Session:Default",
        "cheap-alias",
    )
    assert _call(store) is None  # no reply stored


async def test_the_served_model_is_priced_by_agentrt(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    _provider(store, settings, fake, "k-good")
    put_price(store, "served-x-2026", Price(input_per_mtok_usd=2.0, output_per_mtok_usd=8.0), NOW)
    report, reply = await ModelGateway(store, settings).attempt(_spec("good"), OWNER, HELLO, [])
    assert reply is not None and reply.content == "hi there"
    assert fake.requests[0].body["model"] == "cheap-alias"
    assert report.outcome is AttemptOutcome.OK and report.http_status == 200
    # 1M input tokens at $2/MTok + 0.5M output tokens at $8/MTok.
    assert report.served_model == "served-x-2026" and report.cost_usd == pytest.approx(6.0)
    (row,) = _attempts(store)
    assert (row.requested_model, row.served_model) == ("cheap-alias", "served-x-2026")
    assert (row.tokens_in, row.tokens_out) == (1_000_000, 500_000)
    assert row.cost_usd == pytest.approx(6.0)
    assert row.price_version is not None and row.price_version.startswith("override")
    stored = _call(store)
    assert stored is not None and stored.outcome == "ok" and stored.reply is not None


async def test_cached_input_tokens_are_priced_at_the_cached_price(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    cache_hit = FakeReply(
        content="again", model="served-c", usage=(1_000_000, 100_000), cached_tokens=800_000
    )
    fake.answer_key("k-cache", cache_hit)
    _provider(store, settings, fake, "k-cache")
    price = Price(input_per_mtok_usd=2.0, output_per_mtok_usd=8.0, cached_input_per_mtok_usd=0.5)
    put_price(store, "served-c", price, NOW)
    report, reply = await ModelGateway(store, settings).attempt(_spec("cache"), OWNER, HELLO, [])
    assert reply is not None and reply.usage.cached_prompt_tokens == 800_000
    # 0.2M uncached input at $2 + 0.8M cached at $0.5 + 0.1M output at $8.
    assert report.cost_usd == pytest.approx(0.4 + 0.4 + 0.8)
    (row,) = _attempts(store)
    assert (row.tokens_in, row.tokens_out) == (1_000_000, 100_000)
    assert row.cost_usd == pytest.approx(1.6)


async def test_a_stored_success_is_returned_without_paying_again(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    _provider(store, settings, fake, "k-good", "k-busy")
    gateway = ModelGateway(store, settings)
    first, reply = await gateway.attempt(_spec("good"), OWNER, HELLO, [])
    # The chain's next attempt of the same call (its activity was thought lost).
    again, same = await gateway.attempt(_spec("busy", index=1), OWNER, HELLO, [])
    assert len(fake.requests) == 1
    assert same == reply
    assert again.outcome is AttemptOutcome.OK and again.attempt_id == first.attempt_id
    assert (again.credential_alias, again.cost_usd) == ("good", first.cost_usd)
    assert [a.ordinal for a in _attempts(store)] == [0]


async def test_an_attempt_left_in_flight_is_closed_as_a_timeout_by_the_next(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    _provider(store, settings, fake, "k-good", "k-busy")
    owner = record.CallOwner(
        call_id="call-1",
        tenant="/ws",
        owner_kind=OwnerKind.SESSION,
        owner_id="s1",
        site="Session:Default",
        provider="p1",
        requested_model="cheap-alias",
        purpose="test",
    )
    # Attempt 0's worker died between its request and its answer.
    record.begin_attempt(store, owner, attempt=0, now=NOW)
    assert [a.outcome for a in _attempts(store)] == [IN_FLIGHT]
    await ModelGateway(store, settings).attempt(_spec("good", index=1), OWNER, HELLO, [])
    assert [(a.ordinal, a.outcome) for a in _attempts(store)] == [(0, "timeout"), (1, "ok")]


async def test_no_answer_in_time_is_a_timeout(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    fake.answer_key("k-slow", FakeReply(content="late", delay=5.0))
    _provider(store, settings, fake, "k-slow")
    gateway = ModelGateway(store, settings, timeout=httpx.Timeout(0.3))
    report, reply = await gateway.attempt(_spec("slow"), OWNER, HELLO, [])
    assert reply is None
    assert report.outcome is AttemptOutcome.TIMEOUT and report.http_status is None
    assert [a.outcome for a in _attempts(store)] == ["timeout"]


async def test_an_endpoint_that_refuses_connections_is_a_server_error(
    store: Store, settings: Settings
) -> None:
    with FakeOpenAI() as gone:
        base_url = gone.base_url  # its port is closed once it stops
    credential = CredentialConfig(alias="good", apiKey="k-good")
    config_store.put_provider(store, settings, "p1", base_url, [credential], NOW)
    report, reply = await ModelGateway(store, settings).attempt(_spec("good"), OWNER, HELLO, [])
    assert reply is None
    assert report.outcome is AttemptOutcome.SERVER_ERROR and report.http_status is None


async def test_an_api_key_from_the_environment(
    store: Store, settings: Settings, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    credential = CredentialConfig(alias="env", apiKeyEnv="GATEWAY_TEST_API_KEY")
    config_store.put_provider(store, settings, "p1", fake.base_url, [credential], NOW)
    gateway = ModelGateway(store, settings)
    monkeypatch.delenv("GATEWAY_TEST_API_KEY", raising=False)
    missing, _ = await gateway.attempt(_spec("env"), OWNER, HELLO, [])
    assert missing.outcome is AttemptOutcome.AUTH_ERROR and "GATEWAY_TEST_API_KEY" in (
        missing.error or ""
    )
    assert fake.requests == []  # nothing was sent, but the attempt is on record
    assert [(a.ordinal, a.outcome, a.http_status) for a in _attempts(store)] == [
        (0, "auth_error", None)
    ]
    assert "GATEWAY_TEST_API_KEY" in (_attempts(store)[0].error or "")
    monkeypatch.setenv("GATEWAY_TEST_API_KEY", "k-good")
    report, reply = await gateway.attempt(_spec("env", index=1), OWNER, HELLO, [])
    assert report.outcome is AttemptOutcome.OK and reply is not None
    assert fake.requests[0].authorization == "Bearer k-good"


@pytest.mark.parametrize(
    ("provider", "alias", "error"),
    [("nowhere", "good", "not configured"), ("p1", "stranger", "no credential 'stranger'")],
)
async def test_a_configuration_failure_is_an_attempt_on_record(
    store: Store, settings: Settings, fake: FakeOpenAI, provider: str, alias: str, error: str
) -> None:
    """An attempt the exhaustion message names has its row, even one never sent."""
    _provider(store, settings, fake, "k-good")
    spec = _spec(alias).model_copy(update={"provider": provider})
    gateway = ModelGateway(store, settings)
    report, reply = await gateway.attempt(spec, OWNER, HELLO, [])
    assert reply is None and report.outcome is AttemptOutcome.AUTH_ERROR
    assert fake.requests == []
    (row,) = _attempts(store)
    assert (row.attempt_id, row.outcome, row.provider, row.credential_alias) == (
        report.attempt_id,
        "auth_error",
        provider,
        alias,
    )
    assert error in (row.error or "") and (row.tokens_in, row.cost_usd) == (0, 0.0)
    assert (row.owner_kind, row.owner_id, row.tenant) == ("session", "s1", "/ws")
    # Idempotent by its attempt id: the same attempt again is still one row.
    await gateway.attempt(spec, OWNER, HELLO, [])
    assert len(_attempts(store)) == 1


async def test_a_device_flow_credential_uses_the_stored_token(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    credential = CredentialConfig(alias="me", deviceFlow=QWEN_OAUTH)
    config_store.put_provider(store, settings, "p1", fake.base_url, [credential], NOW)
    gateway = ModelGateway(store, settings)
    first, _ = await gateway.attempt(_spec("me"), OWNER, HELLO, [])
    assert first.device_flow_required == QWEN_OAUTH
    # Until the flow ends the attempt stands as an auth_error (what it is if the flow
    # fails); made again with the new token, the same row records how it went.
    assert fake.requests == [] and [a.outcome for a in _attempts(store)] == ["auth_error"]
    path = credentials_path(settings.resolved_data_dir, QWEN_OAUTH)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"access_token": "k-good", "expiry_date": None}))
    report, reply = await gateway.attempt(_spec("me"), OWNER, HELLO, [])
    assert report.outcome is AttemptOutcome.OK and reply is not None
    assert fake.requests[0].authorization == "Bearer k-good"
    assert [(a.ordinal, a.outcome) for a in _attempts(store)] == [(0, "ok")]


async def test_an_expired_device_flow_token_without_refresh_asks_for_the_flow(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    """The refresh itself is tested in tests/runtime/device_flow/test_device_flow_tokens.py."""
    credential = CredentialConfig(alias="me", deviceFlow=QWEN_OAUTH)
    config_store.put_provider(store, settings, "p1", fake.base_url, [credential], NOW)
    path = credentials_path(settings.resolved_data_dir, QWEN_OAUTH)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"access_token": "t", "expiry_date": 1_000_000}))
    report, reply = await ModelGateway(store, settings).attempt(_spec("me"), OWNER, HELLO, [])
    assert reply is None and report.device_flow_required == QWEN_OAUTH
    assert fake.requests == []


async def test_the_overlay_caps_output_sets_temperature_and_suffixes_the_system_prompt(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    _provider(store, settings, fake, "k-good")
    overlay = Overlay(systemPromptSuffix="Answer in French.", maxOutputTokens=64, temperature=0.2)
    spec = _spec("good").model_copy(update={"overlay": overlay})
    messages = [ChatMessage(role="system", content="Be brief."), *HELLO]
    await ModelGateway(store, settings).attempt(spec, OWNER, messages, [], max_tokens=1000)
    body = fake.requests[0].body
    assert body["max_tokens"] == 64
    assert body["temperature"] == 0.2
    assert body["messages"][0]["content"] == "Be brief.\n\nAnswer in French."


async def test_an_overlay_never_lowers_a_cap_that_stands(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    """The foundational phase's per-turn cap (overlay_may_lower=False): the overlay's
    lower maxOutputTokens does not apply; the rest of the overlay does."""
    _provider(store, settings, fake, "k-good")
    overlay = Overlay(systemPromptSuffix="Answer in French.", maxOutputTokens=64)
    spec = _spec("good").model_copy(update={"overlay": overlay})
    messages = [ChatMessage(role="system", content="Be brief."), *HELLO]
    gateway = ModelGateway(store, settings)
    await gateway.attempt(spec, OWNER, messages, [], max_tokens=16_384, overlay_may_lower=False)
    body = fake.requests[0].body
    assert body["max_tokens"] == 16_384
    assert body["messages"][0]["content"] == "Be brief.\n\nAnswer in French."


async def test_each_attempt_is_a_span(store: Store, settings: Settings, fake: FakeOpenAI) -> None:
    _provider(store, settings, fake, "k-busy", "k-good")
    _spans.clear()
    gateway = ModelGateway(store, settings)
    await gateway.attempt(_spec("busy"), OWNER, HELLO, [])
    await gateway.attempt(_spec("good", index=1), OWNER, HELLO, [])
    spans = [s for s in _spans.get_finished_spans() if s.name == "llm.attempt"]
    seen = [
        (
            (s.attributes or {}).get("llm.credential_alias"),
            (s.attributes or {}).get("llm.outcome"),
            (s.attributes or {}).get("http.response.status_code"),
        )
        for s in spans
    ]
    assert seen == [("busy", "rate_limited", 429), ("good", "ok", 200)]
    assert (spans[1].attributes or {}).get("llm.served_model") == "served-x-2026"


def test_retry_after_as_seconds_milliseconds_or_a_date() -> None:
    assert retry_after_s(httpx.Headers({"Retry-After": "3"})) == 3.0
    assert retry_after_s(httpx.Headers({"retry-after-ms": "1500", "Retry-After": "9"})) == 1.5
    date = "Mon, 30 Nov 2026 12:00:10 GMT"
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()
    assert retry_after_s(httpx.Headers({"Retry-After": date}), now=at) == 10.0
    assert retry_after_s(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry_after_s(httpx.Headers({})) is None


# --- an unknown price or unreported usage is never free (issue 18) -----------------------


async def test_an_unpriced_served_model_is_charged_at_the_requested_models_price(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    _provider(store, settings, fake, "k-good")  # serves "served-x-2026", priced nowhere
    spec = _spec("good").model_copy(update={"model": "gpt-4o-mini"})
    report, reply = await ModelGateway(store, settings).attempt(spec, OWNER, HELLO, [])
    assert reply is not None and report.served_model == "served-x-2026"
    requested, _ = price_for(store, "gpt-4o-mini")
    assert requested is not None
    assert report.cost_usd == pytest.approx(cost_usd(requested, 1_000_000, 500_000))
    assert report.cost_usd > 0
    assert (report.price_source, report.usage_source) == (
        PriceSource.REQUESTED,
        UsageSource.REPORTED,
    )
    (row,) = _attempts(store)
    assert (row.price_source, row.usage_source) == ("requested", "reported")
    assert row.price_version is not None and row.price_version.startswith("genai-prices")


async def test_no_price_and_no_usage_is_estimated_at_the_default_price(
    store: Store, tmp_path: Path, fake: FakeOpenAI
) -> None:
    """A llama.cpp-like server: no usage at all, a served model no table knows."""
    local = FakeReply(content="x" * 400, model="llama-3.2-3b-q4_k_m.gguf", send_usage=False)
    fake.answer_key("k-local", local)
    settings = Settings(
        data_dir=tmp_path,
        workspace=tmp_path,
        default_price_per_mtok_in=2.0,
        default_price_per_mtok_out=4.0,
    )
    _provider(store, settings, fake, "k-local")
    messages = [ChatMessage(role="user", content="y" * 4000)]
    report, reply = await ModelGateway(store, settings).attempt(_spec("local"), OWNER, messages, [])
    assert reply is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (1000, 100)
    assert report.cost_usd == pytest.approx((1000 * 2.0 + 100 * 4.0) / 1e6)
    (row,) = _attempts(store)
    assert (row.tokens_in, row.tokens_out) == (1000, 100)
    assert row.cost_usd == pytest.approx(report.cost_usd)
    assert (row.price_source, row.usage_source, row.price_version) == (
        "default",
        "estimated",
        "default:2/4",
    )
    stored = _call(store)
    assert stored is not None and stored.cost_usd == pytest.approx(report.cost_usd)
    # The chain's next attempt of the call finds the stored success, and says the same.
    again, _ = await ModelGateway(store, settings).attempt(
        _spec("local", index=1), OWNER, messages, []
    )
    assert (again.price_source, again.usage_source) == (
        PriceSource.DEFAULT,
        UsageSource.ESTIMATED,
    )
    assert len(fake.requests) == 1


async def test_a_remote_model_named_scripted_is_not_free(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    fake.answer_key("k-fake", FakeReply(content="hi", model="scripted", usage=(1000, 10)))
    _provider(store, settings, fake, "k-fake")
    report, reply = await ModelGateway(store, settings).attempt(_spec("fake"), OWNER, HELLO, [])
    assert reply is not None and reply.served_model == "scripted"
    assert report.price_source is PriceSource.DEFAULT
    assert report.cost_usd == pytest.approx((1000 * 10.0 + 10 * 30.0) / 1e6)
    (row,) = _attempts(store)
    assert row.price_version == "default:10/30" and row.cost_usd > 0


async def test_the_builtin_scripted_model_stays_free(store: Store, settings: Settings) -> None:
    spec = _spec(None).model_copy(update={"provider": "settings", "model": "scripted"})
    report, reply = await ModelGateway(store, settings).attempt(spec, OWNER, HELLO, [])
    assert reply is not None and report.cost_usd == 0.0
    assert (report.price_source, report.usage_source) == (
        PriceSource.BUILTIN,
        UsageSource.REPORTED,
    )
    (row,) = _attempts(store)
    assert (row.cost_usd, row.price_version, row.price_source) == (0.0, "scripted", "builtin")


async def test_a_remote_server_naming_a_free_model_pays_the_requested_models_price(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    """The served model is the server's word: naming one priced 0 does not make it free."""
    put_price(store, "free-local", Price(input_per_mtok_usd=0, output_per_mtok_usd=0), NOW)
    fake.answer_key("k-free", FakeReply(content="hi", model="free-local", usage=(1000, 10)))
    _provider(store, settings, fake, "k-free")
    spec = _spec("free").model_copy(update={"model": "gpt-4o-mini"})
    report, reply = await ModelGateway(store, settings).attempt(spec, OWNER, HELLO, [])
    assert reply is not None and reply.served_model == "free-local"
    requested, version = price_for(store, "gpt-4o-mini")
    assert requested is not None
    assert report.price_source is PriceSource.REQUESTED
    assert report.cost_usd == pytest.approx(cost_usd(requested, 1000, 10)) and report.cost_usd > 0
    (row,) = _attempts(store)
    assert (row.price_source, row.price_version) == ("requested", version)


async def test_under_a_budget_the_attempt_holds_its_worst_case_and_a_reply_cut_short_keeps_it(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    """Reserve before you spend (issue 21, item 8): with a gate, the in-flight row holds
    the worst case before anything is sent; a refused reservation sends nothing; a
    reply cut short after the server answered (billed, for all anyone knows) is charged
    its reservation, while a refusal before any answer (a 500) costs nothing."""
    _provider(store, settings, fake, "k-cut", "k-down")
    fake.answer_key("k-cut", FakeReply(content="half a rep", truncate=True))
    put_price(store, "cheap-alias", Price(input_per_mtok_usd=0, output_per_mtok_usd=100), NOW)
    gateway = ModelGateway(store, settings)
    held: list[float] = []

    def admit(db: object, reserve_usd: float, attempt_id: str) -> None:
        held.append(reserve_usd)
        return None

    report, reply = await gateway.attempt(
        _spec("cut"), OWNER, HELLO, [], max_tokens=1000, now=NOW, gate=admit
    )
    assert reply is None and held == [pytest.approx(0.1)]  # 1,000 output tokens at $100/M
    [cut] = _attempts(store)
    assert cut.reserved_usd == pytest.approx(0.1)
    assert cut.cost_usd == pytest.approx(0.1)  # answered, then cut: its reservation
    report, reply = await gateway.attempt(
        _spec("down", call_id="call-2"), OWNER, HELLO, [], max_tokens=1000, now=NOW, gate=admit
    )
    assert report.outcome is AttemptOutcome.SERVER_ERROR
    [down] = _attempts(store, "call-2")
    assert down.reserved_usd == pytest.approx(0.1) and down.cost_usd == 0.0
    sent = len(fake.requests)

    def refuse(db: object, reserve_usd: float, attempt_id: str) -> SpendRefusal:
        return SpendRefusal(
            axis="weekly_credit", cap_usd=0.05, spent_usd=0, reserve_usd=reserve_usd
        )

    with pytest.raises(SpendRefused) as refused:
        await gateway.attempt(
            _spec("cut", call_id="call-3"), OWNER, HELLO, [], max_tokens=1000, now=NOW, gate=refuse
        )
    assert refused.value.refusal.axis == "weekly_credit"
    assert len(fake.requests) == sent and _attempts(store, "call-3") == []
