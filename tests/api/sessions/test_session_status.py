"""A session's status snapshots (api/sessions/status.py): its supported commands, its
tasks and its recap. API in process + a real worker (the `daemon` fixture of
test_sessions)."""

from __future__ import annotations

import json

from sqlmodel import col, select

from runtime.llm.models import LlmCallAttempt
from runtime.store import Store
from tests.api.sessions.test_sessions import DaemonFactory, daemon  # noqa: F401  (the fixture)
from tests.fakes.openai_server import FakeOpenAI


async def test_supported_commands_and_tasks(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon()
    sid = (await d.create())["sessionId"]
    commands = (await d.client.get(f"/session/{sid}/supported-commands")).json()
    assert commands == {"v": 1, "sessionId": sid, "availableCommands": [], "availableSkills": []}
    tasks = (await d.client.get(f"/session/{sid}/tasks")).json()
    assert tasks["v"] == 1 and tasks["sessionId"] == sid and tasks["tasks"] == []
    assert isinstance(tasks["now"], int)
    for route in ("supported-commands", "tasks"):
        missing = await d.client.get(f"/session/nope/{route}")
        assert missing.status_code == 404
        assert missing.json()["code"] == "session_not_found"


async def test_recap_is_null_without_dialogue(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.client.post(f"/session/{sid}/recap", json={})
    assert response.status_code == 200
    assert response.json() == {"sessionId": sid, "recap": None}
    assert (await d.client.post("/session/nope/recap")).status_code == 404
    bad = await d.client.post(f"/session/{sid}/recap", headers={"X-Qwen-Client-Id": "bad id!"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_client_id"


async def test_recap_through_the_model(daemon: DaemonFactory) -> None:  # noqa: F811
    with FakeOpenAI() as fake:
        d = await daemon(
            model_provider="openai", openai_model="qwen-test", openai_base_url=fake.base_url
        )
        fake.queue_text("Hello there.")
        sid = (await d.create())["sessionId"]
        prompt_id = (await d.prompt(sid, "fix the retry race")).json()["promptId"]
        await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
        before = len(d.events(sid))
        fake.queue_text("Sure. <recap>Fixing the retry race.\nNext: a test.</recap>")
        response = await d.client.post(f"/session/{sid}/recap")
        asked = fake.requests[-1].body
        # Without a <recap> in the answer: null, a normal 200.
        fake.queue_text("I cannot summarize.")
        empty = await d.client.post(f"/session/{sid}/recap")
    assert response.status_code == 200
    assert response.json() == {"sessionId": sid, "recap": "Fixing the retry race. Next: a test."}
    assert empty.json() == {"sessionId": sid, "recap": None}
    assert not asked.get("tools")
    assert "fix the retry race" in json.dumps(asked["messages"])
    # No event, and the session's history is not extended.
    assert len(d.events(sid)) == before
    # Its attempts are the session's, in the session's tenant, like its prompts'.
    store: Store = d.client.app.state.store  # type: ignore[attr-defined]
    with store.session() as db:
        rows = db.exec(select(LlmCallAttempt).where(col(LlmCallAttempt.owner_id) == sid)).all()
    recaps = [r for r in rows if "/recap/" in r.call_id]
    assert len(recaps) == 2 and len(rows) == 3
    assert {(r.owner_kind, r.tenant) for r in rows} == {("session", str(d.workspace))}
