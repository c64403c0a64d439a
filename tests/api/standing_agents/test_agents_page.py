"""The /ui/agents page: its headers, script and mode catalogue (in process), then headless
Chromium driving it against `agentrt up` with a bearer token (tests/browser/agents_page.mjs):
a chat message typed on the page reaches the agent and its reply appears, an injected tag
renders as text, and a decision approved on the page resolves it."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from runtime.standing_agents.catalog import modes_of
from runtime.standing_agents.contracts import AgentType
from tests.api.agent_tools.test_ui_page import (
    CHROMIUM,
    HTML_SINKS,
    REQUIRED_CSP,
    ROOT,
    _browser_prerequisites,
    _directives,
    _text,
)
from tests.conftest import ApiFactory
from tests.e2e.test_up_e2e import agentrt_up

SCRIPT = ROOT / "tests" / "browser" / "agents_page.mjs"

# The stable hooks the browser test (and anyone scripting the page) relies on.
TEST_IDS = """token tenant tenant-open feature-enable agents agent-status chat-text chat-send
transcript ledger decisions responded-by mode-select mode-apply mode-changes budgets
spend""".split()


async def test_page_is_served_with_a_strict_policy(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/ui/agents")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert set(REQUIRED_CSP) <= _directives(response.headers["content-security-policy"])
    html = response.text
    assert re.findall(r"<script\b[^>]*>", html) == ['<script src="/ui/agents.js" defer>']
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "external asset"
    assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler"
    for test_id in TEST_IDS:
        assert f'data-testid="{test_id}"' in html, test_id


async def test_page_carries_every_agent_types_modes(api: ApiFactory) -> None:
    client = await api()
    html = (await client.get("/ui/agents")).text
    assert "<!-- mode catalogue -->" not in html
    for agent_type in AgentType:
        group = re.search(rf'<optgroup label="{agent_type.value}">(.*?)</optgroup>', html)
        assert group is not None, agent_type
        names = re.findall(r'<option value="([^"]+)"', group.group(1))
        assert names == [mode.name for mode in modes_of(agent_type)]


async def test_script_renders_data_as_text_only(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/ui/agents.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    js = response.text
    for sink in HTML_SINKS:
        assert sink not in js, sink
    assert "textContent" in js
    assert not re.search(r"https?://", js), "the script talks to this server only"
    # The helpers both pages share (api/static/common.js) come first, then the page's own.
    static = ROOT / "api" / "static"
    shared, own = (static / "common.js").read_bytes(), (static / "agents.js").read_bytes()
    assert response.content == shared + b"\n" + own


async def test_page_loads_without_the_token_but_the_api_does_not(api: ApiFactory) -> None:
    """Like the agent-tools page on a loopback bind: the assets carry no data."""
    client = await api(token="s3cret")
    assert (await client.get("/ui/agents")).status_code == 200
    assert (await client.get("/ui/agents.js")).status_code == 200
    assert (await client.get("/api/v1/tenants/t1/agents")).status_code == 401


async def test_index_links_the_page(api: ApiFactory) -> None:
    client = await api()
    assert 'href="/ui/agents"' in (await client.get("/")).text


def _wait_worker(url: str, token: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    body: object = None
    while time.monotonic() < deadline:
        response = httpx.get(
            f"{url}/daemon/status?detail=full",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        body = response.json()
        if response.status_code == 200 and body["temporal"]["workerPolling"]:  # type: ignore[index]
            return
        time.sleep(0.5)
    raise AssertionError(f"worker never polled: {body}")


@pytest.mark.stack  # a real `agentrt up`, driven by Chromium
def test_page_in_chromium_chats_and_answers_a_decision(tmp_path: Path) -> None:
    command = [*_browser_prerequisites()[:1], str(SCRIPT)]
    token = secrets.token_urlsafe(16)
    with agentrt_up(tmp_path, {"AGENTRT_TOKEN": token}) as up:
        up.wait_healthy()
        _wait_worker(up.api_url, token)
        try:
            run = subprocess.run(
                command,
                cwd=ROOT,
                env={
                    **os.environ,
                    "BASE_URL": up.api_url,
                    "API_TOKEN": token,
                    "CHROMIUM_PATH": CHROMIUM,
                },
                capture_output=True,
                text=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired as err:
            output = [_text(err.stdout), _text(err.stderr)]
            raise AssertionError("the browser test hung:\n" + "\n".join(output)) from err
    assert run.returncode == 0, f"browser test failed:\n{run.stdout}\n{run.stderr}"
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["ok"] is True
    assert summary["reply"]
    assert summary["decision"]["resolution"] == "approve"
    print(run.stdout.strip())
