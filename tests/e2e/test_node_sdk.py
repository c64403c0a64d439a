"""The published TypeScript SDK (`@qwen-code/sdk` 0.1.14, `DaemonClient`) driving `agentrt up`:
tests/node/daemon_client.mjs runs health, capabilities, session, SSE (live and replay),
prompts, a permission vote, cancel and close, and prints one JSON line per step."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_up_e2e import _wait_http, _wait_worker_live, agentrt_up

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "tests" / "node"
SCRIPT = NODE_DIR / "daemon_client.mjs"
SDK_DIR = NODE_DIR / "node_modules" / "@qwen-code" / "sdk"


def _node_command() -> list[str]:
    """The node command, or a pytest.skip with what is missing."""
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        pytest.skip("node/npm not installed: the SDK test runs on Node.js")
    if not SDK_DIR.is_dir():
        pytest.skip("tests/node/node_modules missing: run `npm ci` in tests/node (make test does)")
    return [node, str(SCRIPT)]


def _text(stream: str | bytes | None) -> str:
    return stream.decode(errors="replace") if isinstance(stream, bytes) else stream or ""


def test_typescript_sdk_drives_a_session(tmp_path: Path) -> None:
    command = _node_command()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with agentrt_up(tmp_path, env_extra={"AGENTRT_WORKSPACE": str(workspace)}) as up:
        _wait_http(f"{up.api_url}/health")
        _wait_worker_live(up.api_url)
        env = {k: v for k, v in os.environ.items() if k not in ("TOKEN", "QWEN_SERVER_TOKEN")}
        try:
            run = subprocess.run(
                command,
                cwd=ROOT,
                env={**env, "BASE_URL": up.api_url},
                capture_output=True,
                text=True,
                timeout=360,
            )
        except subprocess.TimeoutExpired as err:
            output = [_text(err.stdout), _text(err.stderr)]
            raise AssertionError("the SDK script hung:\n" + "\n".join(output)) from err
    assert run.returncode == 0, f"SDK script failed:\n{run.stdout}\n{run.stderr}"
    steps = [json.loads(line) for line in run.stdout.strip().splitlines()]
    assert all(step["ok"] for step in steps), run.stdout
    assert steps[-1]["step"] == "done"
    assert (workspace / "sdk_made.txt").read_text() == "hi\n"
    assert not (workspace / "sdk_cancelled.txt").exists()
    print(run.stdout.strip())
