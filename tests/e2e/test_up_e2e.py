"""End to end: `agentrt up` as a user runs it, on free ports, then stopped and started again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from runtime.store import EventJournal, Store
from runtime.temporal import connect
from tests.conftest import free_port

# One client for the polls of this process: `httpx.get` builds a client, and its TLS
# context, per request (about 20 ms of CPU each; the waits poll every 250 ms).
LOOPBACK = httpx.Client(trust_env=False)


class Up:
    def __init__(
        self,
        process: subprocess.Popen[str],
        api: int,
        frontend: int,
        ui: int,
        data_dir: Path | None = None,
    ) -> None:
        self.process = process
        self.api_url = f"http://127.0.0.1:{api}"
        self.frontend = f"127.0.0.1:{frontend}"
        self.ui_url = f"http://127.0.0.1:{ui}"
        self.data_dir = data_dir

    def output(self) -> str:
        return self.process.stdout.read() if self.process.stdout else ""

    def wait_healthy(self, timeout: float = 90.0) -> httpx.Response:
        """`/health` once it answers; if `agentrt up` exits first, fail at once with what
        it printed and the end of its children's logs (not a bare connection refused)."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"agentrt up exited with {self.process.returncode} before /health "
                    f"answered:\n{self.output()}{self._log_tails()}"
                )
            try:
                return LOOPBACK.get(f"{self.api_url}/health", timeout=2)
            except httpx.HTTPError as err:
                last = err
                time.sleep(0.25)
        raise AssertionError(f"{self.api_url}/health did not answer: {last}{self._log_tails()}")

    def _log_tails(self) -> str:
        if self.data_dir is None:
            return ""
        tails = []
        for name in ("api", "worker", "temporal"):
            log = self.data_dir / f"{name}.log"
            if log.exists():
                lines = log.read_text(errors="replace").splitlines()[-30:]
                tails.append(f"\n--- {log} (end)\n" + "\n".join(lines))
        return "".join(tails)


def _wait_http(url: str, timeout: float = 90.0) -> httpx.Response:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            return LOOPBACK.get(url, timeout=2)
        except httpx.HTTPError as err:
            last = err
            time.sleep(0.25)
    raise AssertionError(f"{url} did not answer: {last}")


def _port_closed(port: int) -> bool:
    try:
        LOOPBACK.get(f"http://127.0.0.1:{port}/", timeout=1)
    except httpx.HTTPError:
        return True
    return False


@contextmanager
def agentrt_up(
    workdir: Path,
    env_extra: dict[str, str] | None = None,
    ports: tuple[int, int, int] | None = None,
) -> Iterator[Up]:
    api, frontend, ui = ports or (free_port(), free_port(), free_port())
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTRT_")},
        "AGENTRT_PORT": str(api),
        "AGENTRT_TEMPORAL_PORT": str(frontend),
        "AGENTRT_TEMPORAL_UI_PORT": str(ui),
        "AGENTRT_LOG_LEVEL": "WARNING",
        **(env_extra or {}),
    }
    env.pop("TEMPORAL_ADDRESS", None) if "TEMPORAL_ADDRESS" not in (env_extra or {}) else None
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "cli", "up"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    data_dir = Path(env.get("AGENTRT_DATA_DIR") or workdir / ".data")
    up = Up(process, api, frontend, ui, data_dir if data_dir.is_absolute() else workdir / data_dir)
    try:
        yield up
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _stop(up: Up) -> str:
    up.process.send_signal(signal.SIGTERM)
    assert up.process.wait(60) == 0
    return up.output()


def _wait_worker_live(url: str, timeout: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    body: dict[str, object] = {}
    while time.monotonic() < deadline:
        body = LOOPBACK.get(f"{url}/daemon/status?detail=full", timeout=10).json()
        temporal = body["temporal"]
        assert isinstance(temporal, dict)
        if temporal["workerPolling"]:
            return body
        time.sleep(0.5)
    raise AssertionError(f"worker never polled: {body}")


def test_up_serves_everything_and_stops_cleanly(tmp_path: Path) -> None:
    with agentrt_up(tmp_path) as up:
        assert up.wait_healthy().json() == {"status": "ok"}
        caps = httpx.get(f"{up.api_url}/capabilities").json()
        # Not the directory it was started from: a workspace of its own in the data dir.
        workspace = tmp_path.resolve() / ".data" / "workspace"
        assert caps["workspaceCwd"] == str(workspace)
        assert workspace.is_dir()
        assert "health" in caps["features"]
        status = _wait_worker_live(up.api_url)
        assert status["status"] == "ok", status["issues"]
        assert status["temporal"]["embedded"] is True  # type: ignore[index]
        assert _wait_http(up.ui_url).status_code == 200

        # Leave a workflow and a row behind, then stop everything.
        workflow_id = f"probe-{uuid.uuid4()}"

        async def start_probe() -> None:
            client = await connect(up.frontend)
            # No worker runs this type: it stays Running, exactly where it was left.
            await client.start_workflow("ProbeWorkflow", id=workflow_id, task_queue="probe")

        asyncio.run(start_probe())
        journal = EventJournal(Store(f"sqlite:///{tmp_path / '.data' / 'agentrt.db'}"))
        journal.append("probe", "left.here", {"n": 1})

        # A second `agentrt up` on the same ports refuses at once, naming the port.
        api_port, frontend_port, ui_port = (
            int(url.rsplit(":", 1)[1]) for url in (up.api_url, up.frontend, up.ui_url)
        )
        ports = (api_port, frontend_port, ui_port)
        (tmp_path / "second").mkdir()
        with agentrt_up(tmp_path / "second", ports=ports) as second:
            assert second.process.wait(60) == 2
            refused = second.output().strip().splitlines()
        assert len(refused) == 1, refused
        assert f"port {ports[0]} (API) is already in use" in refused[0]
        # Other ports, the same data dir: refused too (one Temporal per temporal.db), and
        # the running one's pid files stay.
        with agentrt_up(tmp_path) as third:
            assert third.process.wait(60) == 2
            refused = third.output().strip().splitlines()
        assert len(refused) == 1, refused
        assert "is in use by another agentrt up" in refused[0]
        assert (tmp_path / ".data" / "temporal.pid").exists()
        assert up.process.poll() is None
        output = _stop(up)
    assert "http://127.0.0.1:" in output and "Web UI" in output
    assert f"session workspace  {workspace}" in output
    assert "model              scripted (scripted)" in output
    assert "api.log" in output and "temporal.log" in output
    assert "agentrt stopped" in output
    assert all(_port_closed(int(url.rsplit(":", 1)[1])) for url in (up.api_url, up.ui_url))
    for name in ("temporal.db", "agentrt.db", "api.log", "worker.log"):
        assert (tmp_path / ".data" / name).exists()

    # A second start finds every workflow and row where the first left them.
    with agentrt_up(tmp_path) as up:
        up.wait_healthy()

        async def describe() -> WorkflowExecutionStatus | None:
            client = await connect(up.frontend, timeout=30)
            return (await client.get_workflow_handle(workflow_id).describe()).status

        assert asyncio.run(describe()) == WorkflowExecutionStatus.RUNNING
        page = EventJournal(Store(f"sqlite:///{tmp_path / '.data' / 'agentrt.db'}")).read("probe")
        assert [(e.seq, e.type) for e in page.entries] == [(1, "left.here")]
        _stop(up)


def test_up_uses_a_reachable_temporal_address(tmp_path: Path, dev_env: WorkflowEnvironment) -> None:
    address = dev_env.client.service_client.config.target_host
    with agentrt_up(tmp_path, {"TEMPORAL_ADDRESS": address}) as up:
        up.wait_healthy()
        status = _wait_worker_live(up.api_url)
        temporal = status["temporal"]
        assert isinstance(temporal, dict)
        assert temporal["address"] == address
        assert temporal["embedded"] is False
        assert _port_closed(int(up.ui_url.rsplit(":", 1)[1]))
        output = _stop(up)
    assert "Web UI" not in output
    assert not (tmp_path / ".data" / "temporal.db").exists()


def test_up_refuses_bad_configuration(tmp_path: Path) -> None:
    with agentrt_up(tmp_path, {"AGENTRT_HOSTNAME": "0.0.0.0"}) as up:
        assert up.process.wait(60) == 2
        output = up.output()
    assert output.strip().splitlines() == [
        "agentrt: refusing to bind non-loopback hostname '0.0.0.0' without a bearer token: "
        "pass --token or set QWEN_SERVER_TOKEN"
    ]


class SseReader:
    """Reads a session's event stream in a thread until the server ends it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opened = threading.Event()
        self.ended = threading.Event()
        self.received = b""
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with httpx.stream(
                "GET", self.url, headers={"Last-Event-ID": "0"}, timeout=httpx.Timeout(120)
            ) as response:
                for chunk in response.iter_bytes():
                    self.received += chunk
                    if b"replay_complete" in self.received:
                        self.opened.set()
        except httpx.HTTPError as err:
            self.error = repr(err)
        finally:
            self.ended.set()


@pytest.mark.parametrize("signum", [signal.SIGINT])
def test_up_stops_on_ctrl_c(tmp_path: Path, signum: int) -> None:
    """Ctrl-C with two SSE clients connected: everything stops and both streams end (the
    API ends them as soon as it is asked to stop, rather than waiting out uvicorn's
    graceful-shutdown timeout)."""
    with agentrt_up(tmp_path) as up:
        up.wait_healthy()
        created = httpx.post(f"{up.api_url}/session", json={}, timeout=60)
        assert created.status_code == 200, created.text
        events = f"{up.api_url}/session/{created.json()['sessionId']}/events"
        readers = [SseReader(events), SseReader(events)]
        for reader in readers:
            assert reader.opened.wait(60), reader.received
        up.process.send_signal(signum)
        assert up.process.wait(60) == 0
        output = up.output()
        for reader in readers:
            assert reader.ended.wait(60)
            assert reader.error is None, reader.error
    assert _port_closed(int(up.api_url.rsplit(":", 1)[1]))
    assert "agentrt stopped" in output
    assert "graceful shutdown exceeded" not in (tmp_path / ".data" / "api.log").read_text()


class HealthWatch:
    """Asks /health every 0.2 s in a thread; remembers every answer (or failure)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[int | str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.answers.append(LOOPBACK.get(f"{self.url}/health", timeout=5).status_code)
            except httpx.HTTPError as err:
                self.answers.append(repr(err))
            self._stop.wait(0.2)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def _pid(data_dir: Path, name: str) -> int:
    return int((data_dir / f"{name}.pid").read_text())


def _prompt(url: str, session_id: str, text: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{url}/session/{session_id}/prompt",
        json={"prompt": [{"type": "text", "text": text}]},
        headers=headers,
        timeout=60,
    )


# Long by design (about 35 s): the embedded Temporal server is killed and restarted by the
# supervisor, and the worker and the API must find it again on their own.
def test_up_survives_a_temporal_crash(tmp_path: Path) -> None:
    """kill -9 of the embedded Temporal server: the supervisor restarts it on its state,
    the API answers throughout (503 temporal_unavailable for what needs Temporal), and the
    worker and the API carry on with the new server without being restarted."""
    data = tmp_path / ".data"
    with agentrt_up(tmp_path) as up:
        up.wait_healthy()
        _wait_worker_live(up.api_url)
        # Before the crash: a session that has run a prompt, and a workflow no worker runs.
        session = httpx.post(f"{up.api_url}/session", json={}, timeout=30).json()
        session_id = session["sessionId"]
        first = _prompt(up.api_url, session_id, "before the crash", Prefer="wait")
        assert first.json() == {"stopReason": "end_turn"}, first.text
        probe_id = f"probe-{uuid.uuid4()}"

        async def start_probe() -> None:
            client = await connect(up.frontend)
            await client.start_workflow("ProbeWorkflow", id=probe_id, task_queue="probe")

        asyncio.run(start_probe())
        temporal_pid, worker_pid, api_pid = (_pid(data, n) for n in ("temporal", "worker", "api"))

        with HealthWatch(up.api_url) as health:
            # Hold the supervisor so the outage lasts while the API is asked about it.
            up.process.send_signal(signal.SIGSTOP)
            try:
                os.kill(temporal_pid, signal.SIGKILL)
                refused = _prompt(up.api_url, session_id, "during the outage")
                assert refused.status_code == 503, refused.text
                assert refused.json()["code"] == "temporal_unavailable"
                assert refused.headers["Retry-After"].isdigit()
                # Store reads keep working.
                listed = httpx.get(
                    f"{up.api_url}/workspace{tmp_path.resolve()}/.data/workspace/sessions",
                    timeout=30,
                )
                assert listed.status_code == 200, listed.text
                assert [s["sessionId"] for s in listed.json()["sessions"]] == [session_id]
                status = httpx.get(f"{up.api_url}/daemon/status", timeout=30).json()
                assert status["temporal"]["reachable"] is False
            finally:
                up.process.send_signal(signal.SIGCONT)

            # The supervisor restarts Temporal; the same session serves a prompt again.
            deadline = time.monotonic() + 90
            answer = _prompt(up.api_url, session_id, "after the crash", Prefer="wait")
            while answer.status_code == 503 and time.monotonic() < deadline:
                time.sleep(0.5)
                answer = _prompt(up.api_url, session_id, "after the crash", Prefer="wait")
            assert answer.json() == {"stopReason": "end_turn"}, answer.text
            # A new workflow starts too.
            thread = httpx.post(
                f"{up.api_url}/session", json={"sessionScope": "thread"}, timeout=30
            )
            assert thread.status_code == 200, thread.text
            second = _prompt(up.api_url, thread.json()["sessionId"], "new", Prefer="wait")
            assert second.json() == {"stopReason": "end_turn"}, second.text
        assert health.answers and set(health.answers) == {200}, health.answers

        assert up.process.poll() is None
        assert _pid(data, "temporal") != temporal_pid
        # Neither the worker nor the API needed a restart.
        assert (_pid(data, "worker"), _pid(data, "api")) == (worker_pid, api_pid)

        async def describe() -> WorkflowExecutionStatus | None:
            client = await connect(up.frontend, timeout=30)
            return (await client.get_workflow_handle(probe_id).describe()).status

        assert asyncio.run(describe()) == WorkflowExecutionStatus.RUNNING
        output = _stop(up)
    assert "restarted the Temporal dev server" in output
    assert not (data / "temporal.pid").exists()


def test_up_with_console_tracing(tmp_path: Path) -> None:
    """OTEL_* configure agentrt's tracing; the embedded Temporal server never sees them
    (it refuses OTEL_TRACES_EXPORTER=console)."""
    with agentrt_up(tmp_path, {"OTEL_TRACES_EXPORTER": "console"}) as up:
        up.wait_healthy()
        status = _wait_worker_live(up.api_url)
        assert status["status"] == "ok", status["issues"]
        assert up.process.poll() is None
        _stop(up)
