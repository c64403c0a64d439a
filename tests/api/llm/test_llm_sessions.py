"""Session prompts and agent-tools turns walk the fallback chain (issue 11), against real
OpenAI-compatible HTTP servers on loopback: one per provider, each answering what the
test queued (429, 5xx, 400, a reply).

The configuration goes through the operator's routes (sessions) or the same store
functions (turns), live: no worker or API restart between a change and the next call.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from runtime.llm import config_store
from runtime.llm.contracts import SESSION_SITE, TURN_SITE, ChainEntry, CredentialConfig
from runtime.settings import Settings
from runtime.store import Store
from tests.api.agent_tools.test_agent_tools_api import GatewayFactory, gateway  # noqa: F401
from tests.api.sessions.test_sessions import DaemonFactory, daemon  # noqa: F401
from tests.fakes.openai_server import FakeOpenAI
from tests.session_helpers import Daemon

TOKEN = "llm-sessions-token"


async def _provider(d: Daemon, provider_id: str, fake: FakeOpenAI, key: str) -> None:
    body = {"baseUrl": fake.base_url, "credentials": [{"alias": "main", "apiKey": key}]}
    response = await d.client.put(f"/api/v1/llm/providers/{provider_id}", json=body)
    assert response.status_code == 200, response.text


async def _preset(
    d: Daemon, preset_id: str, model: str, provider: str, fallback: list[dict[str, str]]
) -> None:
    body = {"model": model, "provider": provider, "fallback": fallback}
    response = await d.client.put(f"/api/v1/llm/presets/{preset_id}", json=body)
    assert response.status_code == 200, response.text


async def _bind(d: Daemon, site: str, preset_id: str) -> None:
    response = await d.client.put(f"/api/v1/llm/sites/{site}/preset", json={"presetId": preset_id})
    assert response.status_code == 200, response.text


async def _two_provider_chain(d: Daemon, alpha: FakeOpenAI, beta: FakeOpenAI) -> None:
    """`chain` on Session:Default: m-alpha on alpha, then m-beta on beta."""
    await _provider(d, "alpha", alpha, "sk-alpha")
    await _provider(d, "beta", beta, "sk-beta")
    await _preset(d, "chain", "m-alpha", "alpha", [{"model": "m-beta", "provider": "beta"}])
    await _bind(d, SESSION_SITE, "chain")


async def _ask(d: Daemon, sid: str, text: str) -> tuple[str, list[dict[str, Any]]]:
    """Prompt and wait for its end: (`turn_complete` or `turn_error`, the prompt's events)."""
    response = await d.prompt(sid, text)
    assert response.status_code in (200, 202), response.text
    prompt_id = response.json()["promptId"]
    ended: list[dict[str, Any]] = []
    for _ in range(600):
        mine = [e for e in d.events(sid) if e.get("promptId") == prompt_id]
        ended = [e for e in mine if e["type"] in ("turn_complete", "turn_error")]
        if ended:
            return ended[0]["type"], mine
        await asyncio.sleep(0.1)
    raise AssertionError(f"prompt {prompt_id} never ended")


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(
        e["data"]["update"]["content"]["text"]
        for e in events
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def _attempts(d: Daemon, **query: str) -> list[dict[str, Any]]:
    response = await d.client.get("/api/v1/llm/attempts", params=query)
    assert response.status_code == 200, response.text
    attempts: list[dict[str, Any]] = response.json()["attempts"]
    return attempts


async def test_a_rate_limited_provider_falls_back_to_the_next(daemon: DaemonFactory) -> None:  # noqa: F811
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        d = await daemon(token=TOKEN)
        await _two_provider_chain(d, alpha, beta)
        alpha.queue_error(429, "slow down")
        beta.queue_text("Hello from beta.")
        sid = (await d.create())["sessionId"]
        end, events = await _ask(d, sid, "hello")
        assert end == "turn_complete", events
        assert _text(events) == "Hello from beta."
        assert alpha.requests[0].body["model"] == "m-alpha"
        assert alpha.requests[0].authorization == "Bearer sk-alpha"
        assert beta.requests[0].body["model"] == "m-beta"
        assert beta.requests[0].authorization == "Bearer sk-beta"
        attempts = await _attempts(d, sessionId=sid)
    assert [(a["provider"], a["outcome"], a["httpStatus"]) for a in attempts] == [
        ("alpha", "rate_limited", 429),
        ("beta", "ok", 200),
    ]
    assert [a["requestedModel"] for a in attempts] == ["m-alpha", "m-beta"]
    assert [a["fallbackStep"] for a in attempts] == [0, 1]
    assert all(a["owner"] == {"kind": "session", "id": sid} for a in attempts)
    assert all(a["site"] == SESSION_SITE and a["presetId"] == "chain" for a in attempts)
    assert attempts[1]["servedModel"] == "m-beta"


async def test_an_exhausted_chain_ends_the_prompt_with_turn_error(daemon: DaemonFactory) -> None:  # noqa: F811
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        d = await daemon(token=TOKEN)
        await _two_provider_chain(d, alpha, beta)
        alpha.queue_error(429)
        beta.queue_error(503)
        sid = (await d.create())["sessionId"]
        end, events = await _ask(d, sid, "hello")
        assert end == "turn_error", events
        error = next(e for e in events if e["type"] == "turn_error")["data"]
        assert error["code"] == "all_providers_exhausted"
        assert "alpha/main: rate_limited (429)" in error["error"]
        assert "beta/main: server_error (503)" in error["error"]
        assert [(a["provider"], a["credentialAlias"], a["outcome"]) for a in error["attempts"]] == [
            ("alpha", "main", "rate_limited"),
            ("beta", "main", "server_error"),
        ]
        assert "sk-" not in error["error"]
        # The session goes on: the next prompt is answered.
        alpha.queue_text("Back.")
        end, events = await _ask(d, sid, "again")
        assert end == "turn_complete", events
        assert _text(events) == "Back."


async def test_a_bad_request_ends_the_chain_at_once(daemon: DaemonFactory) -> None:  # noqa: F811
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        d = await daemon(token=TOKEN)
        await _two_provider_chain(d, alpha, beta)
        alpha.queue_error(400, "context too long")
        sid = (await d.create())["sessionId"]
        end, events = await _ask(d, sid, "hello")
        assert end == "turn_error", events
        error = next(e for e in events if e["type"] == "turn_error")["data"]
        assert error["code"] == "model_bad_request"
        assert "alpha/main: bad_request (400)" in error["error"]
        assert beta.requests == []  # never tried
        attempts = await _attempts(d, sessionId=sid)
    assert [a["outcome"] for a in attempts] == ["bad_request"]


async def test_a_failed_attempts_streamed_text_is_marked_for_discard(
    daemon: DaemonFactory,  # noqa: F811
) -> None:
    """A stream cut mid-way: its chunks were streamed already; `model_attempt_failed` says
    how many to drop, and the reply (and the transcript) is the next attempt's alone."""
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        d = await daemon(token=TOKEN)
        await _two_provider_chain(d, alpha, beta)
        alpha.queue_text("Partial answ", truncate=True)
        beta.queue_text("Whole answer.")
        sid = (await d.create())["sessionId"]
        end, events = await _ask(d, sid, "hello")
        assert end == "turn_complete", events
        failed = [e for e in events if e["type"] == "model_attempt_failed"]
        assert len(failed) == 1, events
        marker = failed[0]["data"]
        assert marker["provider"] == "alpha" and marker["outcome"] == "server_error"
        chunks = [
            e
            for e in events
            if e["type"] == "session_update"
            and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        position = events.index(failed[0])
        before = [e for e in chunks if events.index(e) < position]
        assert len(before) == marker["discardedChunks"] > 0
        assert _text(before) == "Partial answ"
        assert _text([e for e in chunks if events.index(e) > position]) == "Whole answer."
        # The next prompt's history holds the kept answer only.
        beta.queue_text("Again.")
        alpha.queue_error(429)
        await _ask(d, sid, "more")
        contents = [m.get("content") for m in beta.requests[-1].body["messages"]]
    assert "Whole answer." in contents
    assert "Partial answ" not in contents


async def test_rebinding_session_default_applies_at_the_next_prompt(daemon: DaemonFactory) -> None:  # noqa: F811
    """A session created under the deployment's settings (scripted) follows the binding an
    operator attaches between two of its prompts, and the one after, without a restart."""
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        d = await daemon(token=TOKEN)
        sid = (await d.create())["sessionId"]
        end, events = await _ask(d, sid, "first")
        assert end == "turn_complete" and _text(events) == "You said: first", events
        await _provider(d, "alpha", alpha, "sk-alpha")
        await _provider(d, "beta", beta, "sk-beta")
        await _preset(d, "on-alpha", "m-alpha", "alpha", [])
        await _preset(d, "on-beta", "m-beta", "beta", [])
        await _bind(d, SESSION_SITE, "on-alpha")
        alpha.queue_text("From alpha.")
        end, events = await _ask(d, sid, "second")
        assert end == "turn_complete" and _text(events) == "From alpha.", events
        await _bind(d, SESSION_SITE, "on-beta")
        beta.queue_text("From beta.")
        end, events = await _ask(d, sid, "third")
        assert end == "turn_complete" and _text(events) == "From beta.", events
        assert [r.body["model"] for r in alpha.requests] == ["m-alpha"]
        assert [r.body["model"] for r in beta.requests] == ["m-beta"]
        # The conversation went along: beta saw the earlier prompts and answers.
        contents = [m.get("content") for m in beta.requests[0].body["messages"]]
        assert "first" in contents and "From alpha." in contents
        # Detached: the root's settings again.
        response = await d.client.delete(f"/api/v1/llm/sites/{SESSION_SITE}/preset")
        assert response.status_code == 200, response.text
        end, events = await _ask(d, sid, "fourth")
        assert end == "turn_complete" and _text(events) == "You said: fourth", events
        attempts = await _attempts(d, sessionId=sid)
    assert [(a["presetId"], a["provider"]) for a in attempts] == [
        ("settings", "settings"),
        ("on-alpha", "alpha"),
        ("on-beta", "beta"),
        ("settings", "settings"),
    ]


async def test_a_session_model_choice_yields_to_an_operator_preset(daemon: DaemonFactory) -> None:  # noqa: F811
    """POST /session/:id/model picks the model on the deployment's own provider; once an
    operator binds a preset, the preset's model is sent, not one its provider may not know."""
    with FakeOpenAI() as settings_server, FakeOpenAI() as alpha:
        d = await daemon(
            token=TOKEN,
            model_provider="openai",
            openai_model="qwen-test",
            openai_base_url=settings_server.base_url,
        )
        sid = (await d.create())["sessionId"]
        moved = await d.client.post(f"/session/{sid}/model", json={"modelId": "qwen-big"})
        assert moved.status_code == 200, moved.text
        settings_server.queue_text("Big.")
        end, events = await _ask(d, sid, "one")
        assert end == "turn_complete", events
        assert settings_server.requests[-1].body["model"] == "qwen-big"
        context = (await d.client.get(f"/session/{sid}/context")).json()
        assert context["state"]["models"]["currentModelId"] == "qwen-big"
        await _provider(d, "alpha", alpha, "sk-alpha")
        await _preset(d, "on-alpha", "m-alpha", "alpha", [])
        await _bind(d, SESSION_SITE, "on-alpha")
        alpha.queue_text("Alpha.")
        end, events = await _ask(d, sid, "two")
        assert end == "turn_complete", events
        assert alpha.requests[-1].body["model"] == "m-alpha"
        context = (await d.client.get(f"/session/{sid}/context")).json()
        assert context["state"]["models"]["currentModelId"] == "m-alpha"
        caps = (await d.client.get("/capabilities")).json()
        assert caps["modelServices"][0]["modelId"] == "m-alpha", caps["modelServices"]


async def _choose(d: Daemon, sid: str, model: str) -> Any:
    return await d.client.post(f"/session/{sid}/model", json={"modelId": model})


async def test_a_session_model_choice_under_a_preset_is_honoured(daemon: DaemonFactory) -> None:  # noqa: F811
    """A scripted deployment whose Session:Default is bound to a preset on an
    OpenAI-compatible provider: a session may pick any model, and its next prompt asks
    the preset's provider for it."""
    with FakeOpenAI() as alpha:
        d = await daemon(token=TOKEN)
        await _provider(d, "alpha", alpha, "sk-alpha")
        await _preset(d, "on-alpha", "m-alpha", "alpha", [])
        await _bind(d, SESSION_SITE, "on-alpha")
        sid = (await d.create())["sessionId"]
        moved = await _choose(d, sid, "m-alpha-large")
        assert moved.status_code == 200, moved.text
        assert moved.json() == {"modelId": "m-alpha-large"}
        context = (await d.client.get(f"/session/{sid}/context")).json()
        assert context["state"]["models"]["currentModelId"] == "m-alpha-large"
        alpha.queue_text("Large.")
        end, events = await _ask(d, sid, "one")
        assert end == "turn_complete" and _text(events) == "Large.", events
        assert [r.body["model"] for r in alpha.requests] == ["m-alpha-large"]
        attempts = await _attempts(d, sessionId=sid)
    assert [(a["presetId"], a["provider"], a["requestedModel"]) for a in attempts] == [
        ("on-alpha", "alpha", "m-alpha-large")
    ]


async def test_a_binding_change_after_the_choice_wins(daemon: DaemonFactory) -> None:  # noqa: F811
    """The choice holds for the binding it was made under (preset and primary provider):
    another preset, or the same preset moved to another provider, sends its own model;
    back under the same binding, the choice applies again."""
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        d = await daemon(token=TOKEN)
        await _provider(d, "alpha", alpha, "sk-alpha")
        await _provider(d, "beta", beta, "sk-beta")
        await _preset(d, "on-alpha", "m-alpha", "alpha", [])
        await _preset(d, "on-beta", "m-beta", "beta", [])
        await _bind(d, SESSION_SITE, "on-alpha")
        sid = (await d.create())["sessionId"]
        assert (await _choose(d, sid, "m-alpha-large")).status_code == 200
        await _bind(d, SESSION_SITE, "on-beta")
        context = (await d.client.get(f"/session/{sid}/context")).json()
        assert context["state"]["models"]["currentModelId"] == "m-beta"
        beta.queue_text("Beta.")
        end, events = await _ask(d, sid, "one")
        assert end == "turn_complete" and _text(events) == "Beta.", events
        await _bind(d, SESSION_SITE, "on-alpha")
        alpha.queue_text("Alpha large.")
        end, events = await _ask(d, sid, "two")
        assert end == "turn_complete" and _text(events) == "Alpha large.", events
        # The same preset id, now on beta: not the binding the choice was made under.
        await _preset(d, "on-alpha", "m-alpha-on-beta", "beta", [])
        beta.queue_text("Moved.")
        end, events = await _ask(d, sid, "three")
        assert end == "turn_complete" and _text(events) == "Moved.", events
        assert [r.body["model"] for r in alpha.requests] == ["m-alpha-large"]
        assert [r.body["model"] for r in beta.requests] == ["m-beta", "m-alpha-on-beta"]
        attempts = await _attempts(d, sessionId=sid)
    assert [(a["presetId"], a["provider"], a["requestedModel"]) for a in attempts] == [
        ("on-beta", "beta", "m-beta"),
        ("on-alpha", "alpha", "m-alpha-large"),
        ("on-alpha", "beta", "m-alpha-on-beta"),
    ]


async def test_a_preset_on_the_scripted_provider_serves_only_scripted(
    daemon: DaemonFactory,  # noqa: F811
) -> None:
    """Validated against Session:Default's primary provider as bound now: an operator's
    preset on the scripted deployment's own provider serves only 'scripted'."""
    d = await daemon(token=TOKEN)
    await _preset(d, "local", "whatever", "settings", [])
    await _bind(d, SESSION_SITE, "local")
    sid = (await d.create())["sessionId"]
    refused = await _choose(d, sid, "m-alpha-large")
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "model_switch_failed"
    assert "serves only 'scripted'" in refused.json()["error"]
    assert (await _choose(d, sid, "scripted")).status_code == 200
    end, events = await _ask(d, sid, "hello")
    assert end == "turn_complete" and _text(events) == "You said: hello", events


# -- agent-tools turns ------------------------------------------------------------------------


def _turn_chain(database_url: str, settings: Settings, alpha: FakeOpenAI, beta: FakeOpenAI) -> None:
    """`turns` on Turn:Model: m-alpha on alpha, then m-beta on beta (the store functions
    the routes use)."""
    store = Store(database_url)
    now = datetime.now(UTC)
    try:
        for provider_id, fake in (("alpha", alpha), ("beta", beta)):
            key = CredentialConfig(alias="main", apiKey=f"sk-{provider_id}")
            config_store.put_provider(store, settings, provider_id, fake.base_url, [key], now)
        fallback = [ChainEntry(model="m-beta", provider="beta")]
        config_store.put_preset(store, settings, "turns", "m-alpha", "alpha", None, fallback, now)
        config_store.bind_site(store, settings, TURN_SITE, "turns", now)
    finally:
        store.dispose()


async def test_a_model_turn_falls_back_and_records_its_attempts(
    gateway: GatewayFactory,  # noqa: F811
    database_url: str,
) -> None:
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        browser = await gateway()
        _turn_chain(database_url, Settings(), alpha, beta)
        alpha.queue_error(500)
        beta.queue_text("Nothing to search.")
        turn = await browser.start_turn("hello", agent="model")
        events = await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
        done = events[-1]["payload"]
        assert done["summary"] == "Nothing to search.", done
        response = await browser.get(f"/api/v1/llm/attempts?turnId={turn['turn_id']}")
        assert response.status_code == 200, response.text
        attempts = response.json()["attempts"]
    assert [(a["provider"], a["outcome"]) for a in attempts] == [
        ("alpha", "server_error"),
        ("beta", "ok"),
    ]
    assert all(a["owner"] == {"kind": "turn", "id": turn["turn_id"]} for a in attempts)
    assert all(a["site"] == TURN_SITE for a in attempts)


async def test_an_exhausted_model_turn_ends_with_agent_error(
    gateway: GatewayFactory,  # noqa: F811
    database_url: str,
) -> None:
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        browser = await gateway()
        _turn_chain(database_url, Settings(), alpha, beta)
        alpha.queue_error(429)
        beta.queue_error(401)
        turn = await browser.start_turn("hello", agent="model")
        events = await browser.wait_for_event(turn["turn_id"], "agent.error")
    error = events[-1]["payload"]
    assert "alpha/main: rate_limited (429)" in error["message"], error
    assert "beta/main: auth_error (401)" in error["message"], error
    assert "sk-" not in error["message"]
    assert [(a["provider"], a["outcome"]) for a in error["attempts"]] == [
        ("alpha", "rate_limited"),
        ("beta", "auth_error"),
    ]
    state = (await browser.get(f"/api/v1/agent-tools/turns/{turn['turn_id']}")).json()
    assert state["status"] == "failed"


async def test_a_bad_request_ends_a_model_turn_at_once(
    gateway: GatewayFactory,  # noqa: F811
    database_url: str,
) -> None:
    with FakeOpenAI() as alpha, FakeOpenAI() as beta:
        browser = await gateway()
        _turn_chain(database_url, Settings(), alpha, beta)
        alpha.queue_error(400, "no such tool format")
        turn = await browser.start_turn("hello", agent="model")
        events = await browser.wait_for_event(turn["turn_id"], "agent.error")
        assert beta.requests == []  # never tried
    error = events[-1]["payload"]
    assert "alpha/main: bad_request (400)" in error["message"], error
    assert [a["outcome"] for a in error["attempts"]] == ["bad_request"]
