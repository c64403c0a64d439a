"""The published TypeScript SDK's workspace status calls (`workspaceEnv`, `workspacePreflight`,
`workspaceProviders`, `workspaceSkills`, `workspaceMcp`, `sessionSupportedCommands`,
`sessionTasks`, `recapSession`, `setSessionApprovalMode` with `persist`,
`setWorkspaceToolEnabled`, `initWorkspace`) against `agentrt up` with a token:
tests/node/workspace_status.mjs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.e2e.test_node_sdk import NODE_DIR, ROOT, _node_command, _text
from tests.e2e.test_up_e2e import LOOPBACK, agentrt_up

SCRIPT = NODE_DIR / "workspace_status.mjs"
TOKEN = "sdk-status-token"


def _wait_worker(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body: dict[str, object] = {}
    while time.monotonic() < deadline:
        body = LOOPBACK.get(f"{url}/daemon/status", headers=headers, timeout=10).json()
        temporal = body["temporal"]
        if isinstance(temporal, dict) and temporal["workerPolling"]:
            return
        time.sleep(0.5)
    raise AssertionError(f"worker never polled: {body}")


def test_typescript_sdk_workspace_status(tmp_path: Path) -> None:
    node = _node_command()[0]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env_extra = {"AGENTRT_WORKSPACE": str(workspace), "AGENTRT_TOKEN": TOKEN}
    with agentrt_up(tmp_path, env_extra=env_extra) as up:
        up.wait_healthy()
        _wait_worker(up.api_url)
        env = {k: v for k, v in os.environ.items() if k not in ("TOKEN", "QWEN_SERVER_TOKEN")}
        try:
            run = subprocess.run(
                [node, str(SCRIPT)],
                cwd=ROOT,
                env={**env, "BASE_URL": up.api_url, "TOKEN": TOKEN},
                capture_output=True,
                text=True,
                timeout=180,
            )
        except subprocess.TimeoutExpired as err:
            output = [_text(err.stdout), _text(err.stderr)]
            raise AssertionError("the SDK script hung:\n" + "\n".join(output)) from err
    assert run.returncode == 0, f"SDK script failed:\n{run.stdout}\n{run.stderr}"
    steps = [json.loads(line) for line in run.stdout.strip().splitlines()]
    assert all(step["ok"] for step in steps), run.stdout
    assert steps[-1]["step"] == "done"
    assert (workspace / "AGENTS.md").read_bytes() == b""
