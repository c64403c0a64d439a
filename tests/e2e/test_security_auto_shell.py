"""Issue 18, item 10, mounted against a real `agentrt up`: the `auto` approval mode runs a
shell command unasked only when it is a read-only program of the allow-list whose paths
stay in the workspace. Every walk-around of the old deny-list asks; the payloads (a
marker file each, a secret outside the workspace, the data dir inside it) never run.

The daemon runs as a user would start it in a project: `--workspace .` with the default
data dir `.data` inside it, the shell tool on, the session switched to `auto`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_up_e2e import agentrt_up

TOKEN = "auto-shell-token"
SECRET = "PRIVATE-KEY-MARKER-5f1c"


@dataclass
class Daemon:
    client: httpx.Client
    workspace: Path
    session_id: str

    def events(self) -> list[dict[str, Any]]:
        """Every event of the session so far (the stream's replay)."""
        frames: list[dict[str, Any]] = []
        with self.client.stream(
            "GET", f"/session/{self.session_id}/events", headers={"Last-Event-ID": "0"}
        ) as stream:
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    frame = json.loads(line[6:])
                    if frame["type"] == "replay_complete":
                        break
                    frames.append(frame)
        return frames

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        text = f"/call {tool} {json.dumps(arguments)}"
        response = self.client.post(
            f"/session/{self.session_id}/prompt", json={"prompt": [{"type": "text", "text": text}]}
        )
        assert response.status_code == 202, response.text
        prompt_id: str = response.json()["promptId"]
        return prompt_id

    def outcome(self, prompt_id: str, timeout: float = 120.0) -> dict[str, Any]:
        """The prompt's permission request, or its turn_complete when it asked nothing."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for frame in self.events():
                if frame.get("promptId") == prompt_id and frame["type"] in (
                    "permission_request",
                    "turn_complete",
                ):
                    return frame
            time.sleep(0.2)
        mine = [f["type"] for f in self.events() if f.get("promptId") == prompt_id]
        raise AssertionError(f"prompt {prompt_id} neither asked nor completed: {mine}")

    def wait_done(self, prompt_id: str) -> list[dict[str, Any]]:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            frames = self.events()
            if any(f["type"] == "turn_complete" and f.get("promptId") == prompt_id for f in frames):
                return [f for f in frames if f.get("promptId") == prompt_id]
            time.sleep(0.2)
        raise AssertionError(f"prompt {prompt_id} never completed")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("auto-shell")
    workdir = root / "project"
    (workdir / "src").mkdir(parents=True)
    (workdir / "notes.txt").write_text("read me\n")
    (workdir / "src" / "a.py").write_text("value = 1\n")
    outside = root / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text(f"{SECRET}\n")
    (workdir / "leak").symlink_to(outside / "id_rsa")
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{SECRET}\n")
    env = {
        "AGENTRT_TOKEN": TOKEN,
        "AGENTRT_WORKSPACE": ".",
        "AGENTRT_SESSION_SHELL": "true",
        "HOME": str(home),
    }
    with agentrt_up(workdir, env) as up:
        up.wait_healthy()
        client = httpx.Client(
            base_url=up.api_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        created = client.post("/session", json={})
        assert created.status_code == 200, created.text
        sid = created.json()["sessionId"]
        mode = client.post(f"/session/{sid}/approval-mode", json={"mode": "auto"})
        assert mode.status_code == 200, mode.text
        yield Daemon(client, workdir.resolve(), sid)
        client.close()


ATTACKS = [
    ("home-key", "cat $HOME/.ssh/id_rsa"),
    ("git-alias", "git -c alias.x='!touch pwned-git' x"),
    ("awk", "awk 'BEGIN{system(\"touch pwned-awk\")}'"),
    ("find-exec", "find src -exec touch pwned-find {} +"),
    ("xargs", "echo pwned-xargs | xargs touch"),
    ("env-sh", "env X=1 sh -c 'touch pwned-env'"),
    ("subst", "echo $(touch pwned-subst)"),
    ("backticks", "echo `touch pwned-tick`"),
    ("symlink-out", "cat leak"),
    ("data-dir", "cat .data/agentrt.db"),
    ("data-dir-recursive", "grep -rn AGENTRT ."),
]


@pytest.mark.parametrize(("name", "command"), ATTACKS, ids=[name for name, _ in ATTACKS])
def test_auto_asks_before_every_walk_around(daemon: Daemon, name: str, command: str) -> None:
    prompt_id = daemon.call("run_shell_command", {"command": command})
    asked = daemon.outcome(prompt_id)
    assert asked["type"] == "permission_request", f"{command!r} ran unasked"
    assert asked["data"]["toolCall"]["kind"] == "execute"
    cancel = {"outcome": {"outcome": "selected", "optionId": "cancel"}}
    answer = daemon.client.post(f"/permission/{asked['data']['requestId']}", json=cancel)
    assert answer.status_code == 200, answer.text
    daemon.wait_done(prompt_id)
    assert not list(daemon.workspace.glob("pwned-*"))
    assert SECRET not in json.dumps(daemon.events())


def test_a_script_written_unasked_is_not_run_unasked(daemon: Daemon) -> None:
    """`auto` approves the write of x.py; running it is another matter."""
    wrote = daemon.call(
        "write_file", {"file_path": "x.py", "content": "open('pwned-py', 'w').close()\n"}
    )
    assert daemon.outcome(wrote)["type"] == "turn_complete"
    assert (daemon.workspace / "x.py").exists()
    ran = daemon.call("run_shell_command", {"command": "python3 x.py"})
    asked = daemon.outcome(ran)
    assert asked["type"] == "permission_request"
    cancel = {"outcome": {"outcome": "selected", "optionId": "cancel"}}
    daemon.client.post(f"/permission/{asked['data']['requestId']}", json=cancel)
    daemon.wait_done(ran)
    assert not (daemon.workspace / "pwned-py").exists()


def test_a_read_only_command_inside_runs_unasked(daemon: Daemon) -> None:
    prompt_id = daemon.call("run_shell_command", {"command": "cat notes.txt src/a.py"})
    assert daemon.outcome(prompt_id)["type"] == "turn_complete"
    frames = daemon.wait_done(prompt_id)
    assert "permission_request" not in [f["type"] for f in frames]
    updates = [
        f["data"]["update"]
        for f in frames
        if f["type"] == "session_update"
        and f["data"]["update"]["sessionUpdate"] == "tool_call_update"
    ]
    output = json.dumps(updates)
    assert "read me" in output and "value = 1" in output
