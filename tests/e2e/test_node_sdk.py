"""The published TypeScript SDK (`@qwen-code/sdk` 0.1.14, `DaemonClient`) driving `agentrt up`:
tests/node/daemon_client.mjs runs health, capabilities, session, SSE (live and replay),
prompts, a permission vote, the workspace file calls (readWorkspaceFile, readWorkspaceFileBytes,
fileStat, dirList, glob, writeWorkspaceFile, editWorkspaceFile), cancel and close, and prints
one JSON line per step."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_up_e2e import LOOPBACK, _wait_worker_live, agentrt_up

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


def _wait_worker_live_with(url: str, token: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < deadline:
        body = LOOPBACK.get(f"{url}/daemon/status?detail=full", headers=headers, timeout=10).json()
        if body["temporal"]["workerPolling"]:
            return
        time.sleep(0.5)
    raise AssertionError("worker never polled")


# Tokenless: the workspace write routes answer 401 token_required (strict mutation routes);
# with a token: the SDK's writeWorkspaceFile and editWorkspaceFile go through.
@pytest.mark.parametrize("token", [None, "sdk-token"], ids=["tokenless", "token"])
def test_typescript_sdk_drives_a_session(tmp_path: Path, token: str | None) -> None:
    command = _node_command()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    extra = {"AGENTRT_WORKSPACE": str(workspace)}
    if token:
        extra["QWEN_SERVER_TOKEN"] = token
    with agentrt_up(tmp_path, env_extra=extra) as up:
        up.wait_healthy()
        if token:
            _wait_worker_live_with(up.api_url, token)
        else:
            _wait_worker_live(up.api_url)
        env = {k: v for k, v in os.environ.items() if k not in ("TOKEN", "QWEN_SERVER_TOKEN")}
        if token:
            env["TOKEN"] = token
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
    written = workspace / "sdk_written.txt"
    assert written.read_text() == "a: 2\n" if token else not written.exists()
    print(run.stdout.strip())
