"""Issue 18's HTTP attacks, mounted against a real `agentrt up` (one for the module).

- item 7: a tokenless loopback daemon leaves no agentrt mutation open (the Windows verb,
  which used to lease a machine tokenless); a tokenless `agentrt api` beside the `up`.
- item 8: guessing the bearer is answered 429 after ten failures a minute, the right
  token included; neither another loopback source address nor a forged
  `X-Forwarded-For` buys fresh guesses. The test that guesses runs LAST in this module
  (the stack is module-scoped and every loopback client shares one failure bucket), and
  waits the bucket out before it ends, so it locks no other test out in any order.
- item 9: the data dir is 0700 and agentrt's files in it 0600 (the store, temporal.db,
  the logs, the device-flow credentials), a data dir left loose is tightened at start;
  a file written into the workspace is the user's, 0644.
- item 14: the embedded Temporal dev server has no authentication. Its Web UI answers a
  foreign Host (what the README says, recorded here); its HTTP API refuses every Host.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from runtime.settings import Settings
from runtime.temporal import DevServer
from tests.conftest import free_port
from tests.e2e.test_up_e2e import LOOPBACK, Up, _wait_http, agentrt_up
from tests.fakes.device_idp import FakeIdP

TOKEN = "security-gates-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROVIDER = "test-idp"
FOREIGN_HOST = {"Host": "evil.example"}


@dataclass
class Stack:
    up: Up
    workdir: Path
    idp: FakeIdP

    @property
    def data_dir(self) -> Path:
        return self.workdir / ".data"


def _wait_ready(url: str, timeout: float = 90.0) -> None:
    """The worker polls (the daemon's own status, with the bearer)."""
    deadline = time.monotonic() + timeout
    body: dict[str, object] = {}
    while time.monotonic() < deadline:
        response = LOOPBACK.get(f"{url}/daemon/status?detail=full", headers=AUTH, timeout=10)
        body = response.json()
        temporal = body.get("temporal")
        if isinstance(temporal, dict) and temporal.get("workerPolling"):
            return
        time.sleep(0.5)
    raise AssertionError(f"worker never polled: {body}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("security-gates")
    # A data dir an older agentrt left loose (the default umask's 0755 / 0644).
    loose = workdir / ".data"
    loose.mkdir()
    loose.chmod(0o755)
    (loose / "api.log").write_text("an older run's log\n")
    (loose / "api.log").chmod(0o644)
    with FakeIdP(interval=1) as idp:
        providers = json.dumps({PROVIDER: idp.provider_config()})
        env = {"AGENTRT_TOKEN": TOKEN, "AGENTRT_DEVICE_FLOW_PROVIDERS": providers}
        with agentrt_up(workdir, env) as up:
            up.wait_healthy()
            _wait_ready(up.api_url)
            yield Stack(up, workdir, idp)


def _client(source: str = "127.0.0.1") -> httpx.Client:
    """A client whose connections come from `source` (all of 127.0.0.0/8 reaches lo)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30)


# Item 8's test, which guesses the token, is the module's last (see the end of the file).


# -- item 7: the strict gate, tokenless ----------------------------------------------------


def test_a_tokenless_daemon_leases_no_windows_machine(stack: Stack, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTRT_")},
        "AGENTRT_PORT": str(port),
        "AGENTRT_DATA_DIR": str(tmp_path / ".data"),
        "AGENTRT_LOG_LEVEL": "WARNING",
        "TEMPORAL_ADDRESS": stack.up.frontend,
    }
    env.pop("QWEN_SERVER_TOKEN", None)
    api = subprocess.Popen(
        [sys.executable, "-P", "-m", "cli", "api"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/health")
        tenant = f"{base}/api/v1/tenants/acme"
        for method, path, body in (
            ("POST", "/windows/coder-1/windows_launch", {"program": "notepad.exe"}),
            ("POST", "/windows/coder-1/windows_windows", {}),
            ("PUT", "/features/windows-pool", {"enabled": True}),
        ):
            response = httpx.request(method, f"{tenant}{path}", json=body, timeout=10)
            assert response.status_code == 401, (path, response.text)
            assert response.json()["code"] == "token_required"
    finally:
        api.terminate()
        api.wait(30)


# -- item 9: file modes ----------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _authorize_device_flow(stack: Stack, client: httpx.Client) -> Path:
    """A real device flow: the worker writes the credentials into the data dir."""
    flows = f"{stack.up.api_url}/workspace/auth/device-flow"
    started = client.post(flows, json={"providerId": PROVIDER}, headers=AUTH)
    assert started.status_code == 201, started.text
    flow_id = started.json()["deviceFlowId"]
    stack.idp.approve(stack.idp.latest().user_code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        body = client.get(f"{flows}/{flow_id}", headers=AUTH).json()
        if body["status"] == "authorized":
            return stack.data_dir / "credentials" / f"{PROVIDER}.json"
        assert body["status"] == "pending", body
        time.sleep(0.2)
    raise AssertionError("the device flow never completed")


def test_agentrt_state_is_readable_by_its_user_only(stack: Stack) -> None:
    with _client() as client:
        credentials = _authorize_device_flow(stack, client)
        _check_modes(stack, credentials, client)


def _check_modes(stack: Stack, credentials: Path, client: httpx.Client) -> None:
    data = stack.data_dir
    assert _mode(data) == 0o700  # tightened from 0755 at start
    assert _mode(data / "api.log") == 0o600  # an older run's, tightened too
    for name in ("agentrt.db", "temporal.db", "api.log", "worker.log", "temporal.log"):
        assert _mode(data / name) == 0o600, name
    assert _mode(credentials.parent) == 0o700
    assert _mode(credentials) == 0o600
    # Nothing agentrt keeps there is open to others (the workspace is the user's).
    loose = []
    for path in data.rglob("*"):
        if "workspace" in path.relative_to(data).parts:
            continue
        try:
            mode = _mode(path)
        except FileNotFoundError:
            continue  # a journal or temporary file gone meanwhile
        if mode & 0o077:
            loose.append(f"{path} {mode:04o}")
    assert not loose, loose
    # What the agent writes into the workspace is the user's file: the usual 0644.
    written = client.post(
        f"{stack.up.api_url}/file/write",
        json={"path": "notes.md", "content": "# notes\n", "mode": "create"},
        headers=AUTH,
    )
    assert written.status_code == 201, written.text
    caps = client.get(f"{stack.up.api_url}/capabilities", headers=AUTH).json()
    workspace = Path(caps["workspaceCwd"])
    assert _mode(workspace / "notes.md") == 0o644


# -- item 14: the embedded Temporal dev server ----------------------------------------------


def _listening_ports(pid: int) -> list[int]:
    """The TCP ports process `pid` listens on (Linux: its socket inodes in /proc/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(set(ports))


def test_the_web_ui_answers_a_foreign_host(stack: Stack) -> None:
    """What README *Security* says: the Web UI has no Host check (DNS rebinding reaches
    it) and no authentication; `--no-temporal-ui` turns it off."""
    page = httpx.get(stack.up.ui_url, headers=FOREIGN_HOST, timeout=10)
    assert page.status_code == 200 and "<html" in page.text.lower()
    # A workflow of this test's own (a session), so that the list has one to show: an
    # empty list is `{}`, and the module's other tests may run in another process.
    created = httpx.post(f"{stack.up.api_url}/session", json={}, headers=AUTH, timeout=30)
    assert created.status_code == 200, created.text
    workflows = f"{stack.up.ui_url}/api/v1/namespaces/default/workflows"
    deadline = time.monotonic() + 60  # until visibility lists it
    while True:
        listed = httpx.get(workflows, headers=FOREIGN_HOST, timeout=10)
        assert listed.status_code == 200, listed.text
        if listed.json().get("executions"):
            break
        assert time.monotonic() < deadline, listed.text
        time.sleep(0.2)


def test_the_temporal_http_api_refuses_every_host(stack: Stack) -> None:
    """The dev server's HTTP API (a random port) took any Host and a cross-site text/plain
    POST; agentrt starts it with no Host allowed."""
    pid = int((stack.data_dir / "temporal.pid").read_text())
    ui_port = int(stack.up.ui_url.rsplit(":", 1)[1])
    frontend_port = int(stack.up.frontend.rsplit(":", 1)[1])
    refused = []
    for port in _listening_ports(pid):
        if port in (ui_port, frontend_port):
            continue
        base = f"http://127.0.0.1:{port}/api/v1/namespaces/default/workflows"
        try:
            listed = httpx.get(base, timeout=3)
            signal = httpx.post(
                f"{base}/probe/signal/x",
                content=b"{}",
                headers={"Content-Type": "text/plain", "Origin": "http://evil.example"},
                timeout=3,
            )
        except httpx.HTTPError:
            continue  # a gRPC port
        assert listed.status_code != 200, (port, listed.text)
        if listed.status_code == 403 and "Host not allowed" in listed.text:
            assert signal.status_code == 403, (port, signal.text)
            refused.append(port)
    assert len(refused) == 1, "the HTTP API was not found, or not refused"


def test_no_temporal_ui_runs_the_dev_server_headless(tmp_path: Path) -> None:
    headless = DevServer(Settings(data_dir=tmp_path, temporal_ui=False)).command()
    assert "--headless" in headless and "--ui-port" not in headless
    default = DevServer(Settings(data_dir=tmp_path)).command()
    assert "--headless" not in default
    assert default[default.index("--ui-ip") + 1] == "127.0.0.1"


# -- item 8: failed bearer checks: LAST in the module --------------------------------------
# Every loopback address is one key of the failure limiter, so this test's guesses would
# make any test after it wait: it runs last (pytest keeps file order; under xdist each
# worker's own stack sees its tests in that order too), and waits the bucket out before it
# ends all the same, so no other test can be locked out whatever the order.


def test_guessing_the_token_is_throttled(stack: Stack) -> None:
    """Ten failures a minute, then 429 for everyone on loopback: another source address of
    127.0.0.0/8 buys no fresh guesses, nor does a forged X-Forwarded-For (uvicorn would
    trust it from 127.0.0.1, its default proxy; agentrt runs it without proxy headers)."""
    url = f"{stack.up.api_url}/capabilities"
    with _client("127.0.0.1") as guesser, _client("127.0.0.7") as rotated:
        # A request with no bearer at all (a cross-site page's) is no guess.
        for _ in range(15):
            assert guesser.get(url).status_code == 401
        for n in range(10):
            headers = {"Authorization": f"Bearer guess-{n}", "X-Forwarded-For": f"10.9.8.{n}"}
            response = guesser.get(url, headers=headers)
            assert response.status_code == 401, (n, response.text)
        refused = rotated.get(url, headers={"Authorization": "Bearer guess-10"})
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate_limit_exceeded"
        assert int(refused.headers["Retry-After"]) >= 1
        # The right token is refused too, from either address, so a 429 never tells a
        # guess from the token.
        assert guesser.get(url, headers=AUTH).status_code == 429
        assert rotated.get(url, headers=AUTH).status_code == 429
        # Wait the bucket out (one failure refills every 6 s), polling with the right
        # token, which costs nothing: the stack is usable again for whatever runs next.
        deadline = time.monotonic() + 30
        while (status := guesser.get(url, headers=AUTH).status_code) == 429:
            assert time.monotonic() < deadline, "the failure bucket never refilled"
            time.sleep(0.25)
        assert status == 200
