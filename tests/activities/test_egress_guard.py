"""The worker side of issue 18's first door: it reads no secret of its own for a provider,
and connects nowhere link-local or metadata, whatever the store says and whatever a name
resolves to when the connection is made.

Real servers on loopback stand for the attacker's endpoint (tests/fakes/openai_server.py,
windows_pool.py, device_idp.py): each test asserts what they received. The one thing
replaced is name resolution (`runtime.egress_client.resolve`), because 169.254.169.254
cannot be bound here: a name that resolves there must be refused before any connection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from sqlmodel import col, select
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.device_flow.provider import IdentityActivities
from activities.llm.gateway import LlmOwner, ModelGateway
from activities.windows.pool import WindowsPoolActivities
from runtime import egress_client
from runtime.device_flow.contracts import PollInput
from runtime.device_flow.providers import DeviceFlowProvider
from runtime.egress import reserved_env
from runtime.egress_client import EgressRefused
from runtime.failures import decode_failure
from runtime.llm import config_store
from runtime.llm.contracts import (
    AttemptOutcome,
    AttemptSpec,
    ChatMessage,
    CredentialConfig,
    OwnerKind,
)
from runtime.llm.models import LlmCallAttempt, LlmProvider
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.windows.contracts import OpenSessionInput
from runtime.windows.errors import WindowsError, WindowsErrorCode
from tests.fakes.device_idp import FakeIdP
from tests.fakes.openai_server import FakeOpenAI, FakeReply
from tests.fakes.windows_pool import FakeWindowsPool

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
OWNER = LlmOwner(OwnerKind.SESSION, "s1", "/ws")
HELLO = [ChatMessage(role="user", content="hello")]
POOL_SECRET = "pool-secret-never-sent"
METADATA = "169.254.169.254"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        server.answer_key("k-good", FakeReply(content="hi", usage=(3, 1)))
        yield server


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, workspace=tmp_path)


class Resolver:
    """Name resolution the test controls: `answers[name]`, else the system's."""

    def __init__(self) -> None:
        self.answers: dict[str, list[str]] = {}
        self.asked: list[str] = []
        self._system = egress_client.resolve

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host in self.answers:
            return self.answers[host]
        return await self._system(host, port)


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    fake_dns = Resolver()
    monkeypatch.setattr(egress_client, "resolve", fake_dns)
    return fake_dns


def _store_row(store: Store, base_url: str, credentials: list[dict[str, str]]) -> None:
    """A provider written straight into the store: a row from before the rules, or one
    that went around PUT."""
    with store.session() as db:
        db.merge(
            LlmProvider(
                provider_id="p1", base_url=base_url, credentials=credentials, updated_at=NOW
            )
        )
        db.commit()


def _spec(alias: str | None, index: int = 0, call_id: str = "call-1") -> AttemptSpec:
    return AttemptSpec(
        call_id=call_id,
        attempt_index=index,
        site="Session:Default",
        preset_id="fast",
        fallback_step=0,
        provider="p1",
        credential_alias=alias,
        model="m",
    )


def _attempts(store: Store) -> list[LlmCallAttempt]:
    with store.session() as db:
        query = select(LlmCallAttempt).order_by(
            col(LlmCallAttempt.call_id), col(LlmCallAttempt.ordinal)
        )
        return list(db.exec(query))


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


# -- the provider-key rule, in the worker ---------------------------------------------------------


@pytest.mark.parametrize("variable", ["AGENTRT_WINDOWS_POOL_TOKEN", "DATABASE_URL", "HOME"])
async def test_a_stored_row_naming_a_worker_secret_sends_nothing(
    store: Store,
    tmp_path: Path,
    fake: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    monkeypatch.setenv(variable, POOL_SECRET)
    monkeypatch.setenv("EGRESS_TEST_API_KEY", "k-good")
    _store_row(
        store,
        fake.base_url,
        [
            {"alias": "stolen", "apiKeyEnv": variable},
            {"alias": "fine", "apiKeyEnv": "EGRESS_TEST_API_KEY"},
        ],
    )
    # Listing agentrt's own does not help either: they are never a provider key.
    listed = [variable] if reserved_env(variable) else []
    settings = Settings(data_dir=tmp_path, workspace=tmp_path, provider_key_envs=listed)
    gateway = ModelGateway(store, settings)
    report, reply = await gateway.attempt(_spec("stolen"), OWNER, HELLO, [])
    assert reply is None
    assert report.outcome is AttemptOutcome.AUTH_ERROR and report.http_status is None
    error = report.error or ""
    assert variable in error and "_API_KEY" in error and "AGENTRT_PROVIDER_KEY_ENVS" in error
    assert POOL_SECRET not in error
    assert fake.requests == []  # never sent: the variable was not even read
    (row,) = _attempts(store)
    assert (row.outcome, row.http_status, row.cost_usd) == ("auth_error", None, 0.0)
    assert variable in (row.error or "") and POOL_SECRET not in (row.error or "")
    # The provider's allowed credential still works, and only its key leaves.
    ok, _ = await gateway.attempt(_spec("fine", index=1), OWNER, HELLO, [])
    assert ok.outcome is AttemptOutcome.OK
    assert [r.authorization for r in fake.requests] == ["Bearer k-good"]


async def test_an_operator_listed_variable_is_read(
    store: Store, tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "k-good")
    _store_row(store, fake.base_url, [{"alias": "hf", "apiKeyEnv": "HF_TOKEN"}])
    refused, _ = await ModelGateway(store, Settings(data_dir=tmp_path)).attempt(
        _spec("hf"), OWNER, HELLO, []
    )
    assert refused.outcome is AttemptOutcome.AUTH_ERROR and fake.requests == []
    listed = Settings(data_dir=tmp_path, provider_key_envs=["HF_TOKEN"])
    ok, _ = await ModelGateway(store, listed).attempt(_spec("hf", index=1), OWNER, HELLO, [])
    assert ok.outcome is AttemptOutcome.OK
    assert [r.authorization for r in fake.requests] == ["Bearer k-good"]


# -- the egress rule, in the worker ---------------------------------------------------------------


@pytest.mark.parametrize(
    "base_url",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://[::ffff:169.254.169.254]/v1",
        "http://[fd00:ec2::254]/v1",
        "ftp://127.0.0.1/v1",
    ],
)
async def test_a_stored_row_with_a_refused_base_url_sends_nothing(
    store: Store, settings: Settings, base_url: str
) -> None:
    _store_row(store, base_url, [{"alias": "a", "apiKey": "k-good"}])
    report, reply = await ModelGateway(store, settings).attempt(_spec("a"), OWNER, HELLO, [])
    assert reply is None
    # As a connection the rule refuses: the chain moves on to its next provider.
    assert report.outcome is AttemptOutcome.SERVER_ERROR and report.http_status is None
    assert "is refused" in (report.error or "")
    (row,) = _attempts(store)
    assert (row.outcome, row.http_status) == ("server_error", None)


async def test_a_url_with_user_info_is_refused_and_never_shown(
    store: Store, settings: Settings, fake: FakeOpenAI
) -> None:
    with_secret = fake.base_url.replace("http://", "http://admin:hunter2@")
    _store_row(store, with_secret, [{"alias": "a", "apiKey": "k-good"}])
    report, _ = await ModelGateway(store, settings).attempt(_spec("a"), OWNER, HELLO, [])
    assert report.outcome is AttemptOutcome.SERVER_ERROR and fake.requests == []
    assert "user-info" in (report.error or "") and "hunter2" not in (report.error or "")
    assert "hunter2" not in (_attempts(store)[0].error or "")
    listed = {v.provider_id: v for v in config_store.list_providers(store, settings)}
    assert listed["p1"].base_url == fake.base_url  # shown without it


async def test_a_name_resolving_to_metadata_is_refused_when_connecting(
    store: Store, settings: Settings, fake: FakeOpenAI, resolver: Resolver
) -> None:
    """Accepted at PUT (a name), refused at connect time whenever it resolves there: the
    address checked is the one connected to, so a rebinding resolver gains nothing."""
    port = _port(fake.base_url)
    credential = CredentialConfig(alias="a", apiKey="k-good")
    base_url = f"http://model.test:{port}/v1"
    config_store.put_provider(store, settings, "p1", base_url, [credential], NOW)
    gateway = ModelGateway(store, settings)

    resolver.answers["model.test"] = [METADATA]
    refused, _ = await gateway.attempt(_spec("a"), OWNER, HELLO, [])
    assert refused.outcome is AttemptOutcome.SERVER_ERROR and refused.http_status is None
    error = refused.error or ""
    assert "EgressRefused" in error and f"model.test ({METADATA})" in error
    assert "link-local or cloud-metadata" in error and "k-good" not in error
    assert fake.requests == []

    resolver.answers["model.test"] = ["127.0.0.1"]  # a local model server: allowed
    ok, _ = await gateway.attempt(_spec("a", index=1), OWNER, HELLO, [])
    assert ok.outcome is AttemptOutcome.OK
    assert len(fake.requests) == 1 and fake.requests[0].headers["host"] == f"model.test:{port}"

    # One bad answer among good ones is enough to refuse the name.
    resolver.answers["model.test"] = ["127.0.0.1", f"::ffff:{METADATA}"]
    # (another call: the first one succeeded, and a call that did never pays twice)
    again, _ = await gateway.attempt(_spec("a", call_id="call-2"), OWNER, HELLO, [])
    assert again.outcome is AttemptOutcome.SERVER_ERROR and len(fake.requests) == 1
    assert [r.outcome for r in _attempts(store)] == ["server_error", "ok", "server_error"]


async def test_the_guard_connects_to_the_addresses_it_checked(
    fake: FakeOpenAI, resolver: Resolver
) -> None:
    """Nothing resolves the name a second time: the guard tries the checked addresses in
    order (127.0.0.2 has no server: refused, then 127.0.0.1), and a real name (`localhost`)
    goes through the system's resolver."""
    port = _port(fake.base_url)
    resolver.answers["two.test"] = ["127.0.0.2", "127.0.0.1"]
    body = {"model": "m", "messages": [], "stream": False}
    headers = {"Authorization": "Bearer k-good"}
    async with egress_client.egress_client(timeout=5.0, headers=headers) as http:
        answer = await http.post(f"http://two.test:{port}/v1/chat/completions", json=body)
        assert answer.status_code == 200
        assert fake.requests[-1].headers["host"] == f"two.test:{port}"
        answer = await http.post(f"http://localhost:{port}/v1/chat/completions", json=body)
        assert answer.status_code == 200
        assert fake.requests[-1].headers["host"] == f"localhost:{port}"
        resolver.answers["gone.test"] = ["127.0.0.2"]
        with pytest.raises(httpx.ConnectError) as gone:
            await http.post(f"http://gone.test:{port}/v1/chat/completions", json=body)
        assert not isinstance(gone.value, EgressRefused)
        resolver.answers["meta.test"] = ["fe80::1"]
        with pytest.raises(EgressRefused) as refused:
            await http.post(f"http://meta.test:{port}/v1/chat/completions", json=body)
        assert refused.value.refusal.rule == "link_local_or_metadata"
    assert len(fake.requests) == 2
    assert resolver.asked.count("two.test") == 1 and "localhost" in resolver.asked


# -- the same rule for the Windows pool and the device-flow endpoints -----------------------------


async def _pool_error(acts: WindowsPoolActivities) -> tuple[WindowsError, bool]:
    data = OpenSessionInput(tenant="acme", holder="coder-1", lease_ms=300_000)
    with pytest.raises(ApplicationError) as info:
        await ActivityEnvironment().run(acts.open_session, data)
    err = decode_failure(info.value)
    assert isinstance(err, WindowsError), info.value
    return err, info.value.non_retryable


async def test_the_windows_pool_token_never_goes_to_a_refused_address(
    store: Store, resolver: Resolver
) -> None:
    journal = EventJournal(store)
    with FakeWindowsPool(token=POOL_SECRET) as pool:
        port = _port(pool.base_url)
        resolver.answers["pool.test"] = [METADATA]
        named = Settings(
            windows_pool_url=f"http://pool.test:{port}", windows_pool_token=POOL_SECRET
        )
        acts = WindowsPoolActivities(named, journal)
        err, _ = await _pool_error(acts)
        assert err.code is WindowsErrorCode.POOL_UNAVAILABLE and "link-local" in err.message
        await acts.client.aclose()
        literal = Settings(windows_pool_url=f"http://{METADATA}", windows_pool_token=POOL_SECRET)
        acts = WindowsPoolActivities(literal, journal)
        err, non_retryable = await _pool_error(acts)
        assert non_retryable and "AGENTRT_WINDOWS_POOL_URL" in err.message
        await acts.client.aclose()
        assert pool.requests == []


async def test_device_flow_endpoints_are_checked_when_connecting(
    store: Store, tmp_path: Path, resolver: Resolver
) -> None:
    identity = IdentityActivities(store, EventJournal(store), tmp_path / "data")
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_run_id="run-1")
    with FakeIdP() as idp:
        port = _port(idp.base_url)
        provider = DeviceFlowProvider(
            provider_id="idp",
            device_authorization_endpoint=f"http://idp.test:{port}/device/code",
            token_endpoint=f"http://idp.test:{port}/token",
            client_id=idp.client_id,
        )
        resolver.answers["idp.test"] = [METADATA]
        refused = await env.run(identity.request_code, provider)
        assert refused.code is None and "link-local or cloud-metadata" in (refused.hint or "")
        assert idp.device_requests == []
        # The name resolves to the IdP for the code, then to the metadata service for
        # the poll: the poll fails for good, naming the rule, and sends nothing.
        resolver.answers["idp.test"] = ["127.0.0.1"]
        started = await env.run(identity.request_code, provider)
        assert started.code is not None and len(idp.device_requests) == 1
        resolver.answers["idp.test"] = [METADATA]
        poll = await env.run(identity.poll_token, PollInput(provider=provider, flow_id="run-1"))
        assert (poll.outcome, poll.error_kind) == ("failed", "upstream_error")
        assert "link-local or cloud-metadata" in (poll.hint or "")
        assert idp.token_requests == []
