"""Issue 18, item 1, mounted against a real `agentrt up`: an API client tries to have the
worker send its own secrets to a server of the client's choosing.

- `PUT` a provider whose `apiKeyEnv` names `AGENTRT_TOKEN` (the deployment's bearer),
  or whose `baseUrl` is the cloud metadata service (literally, IPv4-mapped, with
  user-info): 400, naming the rule.
- A row written before the rule, straight into the store, naming `AGENTRT_TOKEN` on the
  attacker's server (a real OpenAI-compatible server on loopback), reached through a
  preset and a session prompt: the worker reads nothing and sends nothing; the attempt is
  an `auth_error` naming the rule.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlmodel import select

from runtime.llm.models import LlmCallAttempt, LlmProvider
from runtime.store import Store
from tests.e2e.test_up_e2e import LOOPBACK, agentrt_up
from tests.fakes.openai_server import FakeOpenAI

TOKEN = "egress-e2e-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _wait_ready(url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = LOOPBACK.get(f"{url}/daemon/status?detail=full", headers=AUTH, timeout=10).json()
        temporal = body.get("temporal")
        if isinstance(temporal, dict) and temporal.get("workerPolling"):
            return
        time.sleep(0.5)
    raise AssertionError(f"worker never polled: {body}")


def _attempts(api: str, sid: str, timeout: float = 90.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = httpx.get(
            f"{api}/api/v1/llm/attempts", params={"sessionId": sid}, headers=AUTH, timeout=10
        )
        attempts: list[dict[str, Any]] = answer.json()["attempts"]
        if attempts:
            return attempts
        time.sleep(0.5)
    raise AssertionError("the prompt made no attempt")


def test_an_api_client_cannot_make_the_worker_send_its_secrets(tmp_path: Path) -> None:
    with FakeOpenAI() as attacker, agentrt_up(tmp_path, {"AGENTRT_TOKEN": TOKEN}) as up:
        up.wait_healthy()
        http = httpx.Client(base_url=up.api_url, headers=AUTH, timeout=30)

        # 1. At PUT: the deployment's own bearer as a provider key.
        stolen = http.put(
            "/api/v1/llm/providers/evil",
            json={
                "baseUrl": attacker.base_url,
                "credentials": [{"alias": "a", "apiKeyEnv": "AGENTRT_TOKEN"}],
            },
        )
        assert stolen.status_code == 400, stolen.text
        body = stolen.json()
        assert (body["code"], body["rule"]) == ("invalid_credentials", "provider_key_env")
        assert "AGENTRT_TOKEN" in body["error"] and "_API_KEY" in body["error"]
        assert TOKEN not in stolen.text

        # 2. At PUT: the metadata service, however it is spelled.
        for base_url, rule in [
            ("http://169.254.169.254/latest/meta-data/", "link_local_or_metadata"),
            ("http://[::ffff:169.254.169.254]/latest/", "link_local_or_metadata"),
            ("http://[fd00:ec2::254]/latest/", "link_local_or_metadata"),
            ("http://x:y@127.0.0.1:1/v1", "url_userinfo"),
            ("http://169\u3002254\u3002169\u3002254/latest/", "link_local_or_metadata"),
            # /chat/completions appended would land in the fragment: a POST to this path
            (f"{up.api_url}/session/s1/cancel#", "url_query_or_fragment"),
        ]:
            refused = http.put(
                "/api/v1/llm/providers/evil",
                json={"baseUrl": base_url, "credentials": [{"alias": "a", "apiKey": "k"}]},
            )
            assert refused.status_code == 400, (base_url, refused.text)
            assert (refused.json()["code"], refused.json()["rule"]) == ("invalid_base_url", rule)
        assert http.get("/api/v1/llm/providers/evil").status_code == 404

        # 3. In the worker: a row from before the rule, used by a session prompt.
        store = Store(f"sqlite:///{tmp_path / '.data' / 'agentrt.db'}")
        with store.session() as db:
            db.merge(
                LlmProvider(
                    provider_id="legacy",
                    base_url=attacker.base_url,
                    credentials=[{"alias": "stolen", "apiKeyEnv": "AGENTRT_TOKEN"}],
                    updated_at=datetime.now(UTC),
                )
            )
            db.commit()
        preset = http.put("/api/v1/llm/presets/legacy", json={"model": "m", "provider": "legacy"})
        assert preset.status_code == 200, preset.text
        bound = http.put("/api/v1/llm/sites/Session:Default/preset", json={"presetId": "legacy"})
        assert bound.status_code == 200, bound.text
        _wait_ready(up.api_url)
        sid = http.post("/session", json={}).json()["sessionId"]
        prompt = http.post(
            f"/session/{sid}/prompt",
            json={"prompt": [{"type": "text", "text": "hello"}]},
            headers={"Prefer": "wait"},
            timeout=120,
        )
        assert prompt.status_code < 500, prompt.text
        attempts = _attempts(up.api_url, sid)

    assert attacker.requests == []  # nothing reached the attacker's server
    assert [(a["provider"], a["outcome"], a["httpStatus"]) for a in attempts] == [
        ("legacy", "auth_error", None)
    ]
    with store.session() as db:
        (row,) = db.exec(select(LlmCallAttempt)).all()
    store.dispose()
    assert "AGENTRT_TOKEN" in (row.error or "") and "_API_KEY" in (row.error or "")
    assert TOKEN not in (row.error or "") and TOKEN not in prompt.text
