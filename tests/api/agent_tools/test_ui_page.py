"""The /ui/agent-tools page: its headers and script (in process), then headless Chromium
driving it against `agentrt up` (tests/browser/agent_tools_page.mjs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ApiFactory
from tests.e2e.test_up_e2e import _wait_worker_live, agentrt_up

ROOT = Path(__file__).resolve().parents[3]
BROWSER_DIR = ROOT / "tests" / "browser"
SCRIPT = BROWSER_DIR / "agent_tools_page.mjs"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

REQUIRED_CSP = (
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "connect-src 'self'",
)

# The stable hooks the browser test (and anyone scripting the page) relies on.
TEST_IDS = """prompt agent start turn-status events objects catalog
authorization approve deny decided-by token""".split()
# Ways a script turns a string into markup or code: the page uses none of them.
HTML_SINKS = """innerHTML outerHTML insertAdjacentHTML document.write eval(
createContextualFragment DOMParser Function(""".split()


def _directives(policy: str) -> set[str]:
    return {" ".join(part.split()) for part in policy.split(";") if part.strip()}


async def test_page_is_served_with_a_strict_policy(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/ui/agent-tools")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert set(REQUIRED_CSP) <= _directives(response.headers["content-security-policy"])
    html = response.text
    # One script, ours, by URL: no inline script (the policy would refuse it anyway).
    assert re.findall(r"<script\b[^>]*>", html) == ['<script src="/ui/agent-tools.js" defer>']
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "external asset"
    assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler"
    for test_id in TEST_IDS:
        assert f'data-testid="{test_id}"' in html, test_id


async def test_script_renders_data_as_text_only(api: ApiFactory) -> None:
    client = await api()
    response = await client.get("/ui/agent-tools.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.headers["x-content-type-options"] == "nosniff"
    js = response.text
    for sink in HTML_SINKS:
        assert sink not in js, sink
    assert "textContent" in js
    assert not re.search(r"https?://", js), "the script talks to this server only"
    # The helpers both pages share (api/static/common.js) come first, then the page's own.
    static = ROOT / "api" / "static"
    shared, own = (static / "common.js").read_bytes(), (static / "agent_tools.js").read_bytes()
    assert response.content == shared + b"\n" + own


def _browser_prerequisites() -> list[str]:
    """The node command, or a pytest.skip with what is missing."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not installed ({CHROMIUM}); .ci/run installs it")
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed: the browser test runs on Node.js")
    if not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        pytest.skip(
            "tests/browser/node_modules missing: run `npm ci` in tests/browser (make test does)"
        )
    return [node, str(SCRIPT)]


def _text(stream: str | bytes | None) -> str:
    return stream.decode(errors="replace") if isinstance(stream, bytes) else stream or ""


@pytest.mark.stack  # a real `agentrt up`, driven by Chromium
def test_page_in_chromium_approves_and_denies(tmp_path: Path) -> None:
    command = _browser_prerequisites()
    with agentrt_up(tmp_path) as up:
        up.wait_healthy()
        _wait_worker_live(up.api_url)
        try:
            run = subprocess.run(
                command,
                cwd=ROOT,
                env={**os.environ, "BASE_URL": up.api_url, "CHROMIUM_PATH": CHROMIUM},
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
    assert summary["approved"]["status"] == "completed"
    assert summary["denied"]["status"] == "denied"
    print(run.stdout.strip())
