"""`agentrt up`: the supervisor of the embedded Temporal server, the worker and the API.

`cli.py` parses the command and hands `up` here; the other commands run one part each.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import httpx

from runtime.settings import Settings
from runtime.startup import StartupRefusal

if TYPE_CHECKING:
    from runtime.temporal import DevServer

log = logging.getLogger("agentrt")


def port_in_use(host: str, port: int) -> bool:
    """True when something listens on (host, port): a bind like a server's fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # As the servers do: a port left in TIME_WAIT by a stopped run is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def check_ports(ports: Sequence[tuple[str, str, int, str]]) -> None:
    """Refuse to start when one of `(what, host, port, flag)` is taken.

    Raises:
        StartupRefusal: naming the first port in use and the flag that moves it.
    """
    for what, host, port, flag in ports:
        if port and port_in_use(host, port):
            raise StartupRefusal(
                f"port {port} ({what}) is already in use on {host}: is another agentrt "
                f"running? Stop it, or choose another port with {flag} "
                f"(AGENTRT_{flag.removeprefix('--').replace('-', '_').upper()})"
            )


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold `<data-dir>/agentrt.lock` for as long as this process lives (the kernel drops
    the lock when it dies, `kill -9` included).

    Raises:
        StartupRefusal: when another `agentrt up` holds it.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = open(data_dir / "agentrt.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        handle.close()
        raise StartupRefusal(
            f"{data_dir} is in use by another agentrt up (pid {holder}): stop it, or give "
            "this one its own data dir (AGENTRT_DATA_DIR or --data-dir)"
        ) from None
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


class Backoff:
    """The pause before restarting a child that died.

    It doubles with each death that follows a short run, from `first` up to `cap`,
    and starts again from `first` once a run lasted `stable` seconds: a crash now
    and then costs `first`, a child that cannot start is retried every `cap`.
    """

    def __init__(self, first: float = 0.5, cap: float = 30.0, stable: float = 60.0) -> None:
        self.first = first
        self.cap = cap
        self.stable = stable
        self.failures = 0

    def delay(self, ran_for: float) -> float:
        """The pause before the next start, given how long the run that ended lasted."""
        if ran_for >= self.stable:
            self.failures = 0
        pause = min(self.cap, self.first * 2.0 ** min(self.failures, 32))
        self.failures += 1
        return pause


def _embedded_ports(settings: Settings) -> list[tuple[str, str, int, str]]:
    ui = ("Temporal Web UI", "127.0.0.1", settings.temporal_ui_port, "--temporal-ui-port")
    return [
        ("Temporal frontend", "127.0.0.1", settings.temporal_port, "--temporal-port"),
        *([ui] if settings.temporal_ui else []),
    ]


class Supervisor:
    """Starts Temporal (unless one is reachable), the worker and the API; stops them all.

    A child that dies on its own is restarted, so a crash of any of them costs a few
    seconds, never state: all of it is in Temporal and the store.
    - The worker and the API are restarted at once; five exits within a minute stop
      everything (they cannot run with this configuration).
    - The embedded Temporal server is restarted on the same ports with the same
      database file, after a `Backoff` pause so that one that cannot start does not
      spin. It is never given up on: while it is down the API keeps answering what
      the store can answer (and 503 `temporal_unavailable` for the rest), and the
      worker's polls retry until it is back; neither needs a restart.
    While a child runs, its pid is in `<data-dir>/<name>.pid` (temporal, worker, api).
    """

    def __init__(self, settings: Settings, child_env: dict[str, str]) -> None:
        """`child_env`: the settings as the environment of the worker and the API
        (`cli.settings_to_env`), on top of this process's own."""
        self.settings = settings
        self.child_env = child_env
        self.stopping = False
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self._lock: IO[str] | None = None
        self.dev_server: DevServer | None = None
        self.temporal_backoff = Backoff()
        self.temporal_started = 0.0
        self.temporal_restart_at: float | None = None

    def _signal(self, signum: int, _frame: Any) -> None:
        self.stopping = True

    def pid_file(self, name: str) -> Path:
        return self.settings.resolved_data_dir / f"{name}.pid"

    def start_dev_server(self) -> None:
        assert self.dev_server is not None
        self.dev_server.start()
        self.temporal_started = time.monotonic()
        assert self.dev_server.process is not None
        self.pid_file("temporal").write_text(f"{self.dev_server.process.pid}\n")

    async def start_temporal(self) -> str:
        from runtime.temporal import DevServer, connect, ensure_search_attributes, reachable

        settings = self.settings
        address = settings.temporal_address
        if address and await reachable(address, settings.temporal_namespace):
            log.info("using the Temporal server at %s", address)
        else:
            if address:
                log.warning(
                    "TEMPORAL_ADDRESS %s is not reachable: starting the embedded one", address
                )
                check_ports(_embedded_ports(settings))
            self.dev_server = DevServer(settings)
            for attempt in range(1, 4):
                self.start_dev_server()
                try:
                    await self.dev_server.wait_ready()
                    break
                except RuntimeError as err:  # it exited during start-up
                    if attempt == 3:
                        raise
                    log.warning("%s; starting it again (attempt %d)", err, attempt + 1)
            address = self.dev_server.address
        client = await connect(address, settings.temporal_namespace, timeout=30)
        added = await ensure_search_attributes(client)
        if added:
            log.info("registered search attributes %s", ", ".join(added))
        return address

    def watch_temporal(self) -> None:
        """Restart the embedded Temporal server once it died and its pause is over."""
        server = self.dev_server
        if server is None or server.process is None:
            return
        now = time.monotonic()
        if self.temporal_restart_at is None:
            if server.process.poll() is None:
                return
            pause = self.temporal_backoff.delay(now - self.temporal_started)
            self.temporal_restart_at = now + pause
            self.pid_file("temporal").unlink(missing_ok=True)
            log.error(
                "the Temporal dev server exited with %s; restarting it in %.1f s (see %s)",
                server.process.returncode,
                pause,
                self.settings.resolved_data_dir / "temporal.log",
            )
        elif now >= self.temporal_restart_at:
            self.temporal_restart_at = None
            self.start_dev_server()
            log.warning("restarted the Temporal dev server on %s", server.address)

    def spawn_child(self, name: str, env: dict[str, str]) -> None:
        from runtime.temporal import spawn

        log_file = self.settings.resolved_data_dir / f"{name}.log"
        # -P: the current directory (the user's, maybe with a cli.py of its own) is not
        # put on sys.path; this module is found where it is installed.
        child = spawn([sys.executable, "-P", "-m", "cli", name], env=env, log_file=log_file)
        self.children[name] = child
        self.pid_file(name).write_text(f"{child.pid}\n")

    def wait_api_ready(self, timeout: float = 60.0) -> bool:
        url = f"http://127.0.0.1:{self.settings.port}/health"
        headers = {"Host": f"127.0.0.1:{self.settings.port}"}
        if self.settings.token:
            headers["Authorization"] = f"Bearer {self.settings.token}"
        deadline = time.monotonic() + timeout
        # One client for every poll: a client per request builds a TLS context each time
        # (about 20 ms of CPU), most of what this wait cost. Loopback: no proxy applies.
        with httpx.Client(timeout=1, trust_env=False) as http:
            while time.monotonic() < deadline and not self.stopping:
                api = self.children.get("api")
                if api is not None and api.poll() is not None:
                    return False
                try:
                    if http.get(url, headers=headers).status_code == 200:
                        return True
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        return False

    def ports_to_check(self) -> list[tuple[str, str, int, str]]:
        settings = self.settings
        ports = [("API", settings.hostname.strip("[]"), settings.port, "--port")]
        if not settings.temporal_address:
            ports += _embedded_ports(settings)
        return ports

    def banner(self, address: str) -> str:
        """What `agentrt up` prints once the API answers: where everything is."""
        from runtime.llm.active import active_model

        settings = self.settings
        host = settings.hostname if ":" not in settings.hostname else f"[{settings.hostname}]"
        api = f"http://{host}:{settings.port}"
        data = settings.resolved_data_dir
        model = active_model(settings)
        lines = [
            "agentrt is up",
            f"  API                {api}  (index {api}/, OpenAPI docs {api}/docs)",
            f"  agent-tools page   {api}/ui/agent-tools",
            f"  Temporal frontend  {address}",
        ]
        if self.dev_server is not None and settings.temporal_ui:
            lines.append(f"  Temporal Web UI    {self.dev_server.ui_url}")
        lines += [
            f"  model              {model.provider} ({model.model_id})",
            f"  session workspace  {settings.resolved_workspace}",
            f"  data               {data}",
            f"  logs               {data / 'api.log'}, {data / 'worker.log'}"
            + (f", {data / 'temporal.log'}" if self.dev_server is not None else ""),
            "Ctrl-C stops everything.",
        ]
        return "\n".join(lines) + "\n"

    def run(self) -> int:
        from runtime.investigation.demo import ensure_demo
        from runtime.store import Store, upgrade_to_head
        from runtime.temporal import stop_processes

        settings = self.settings
        # Before anything else: a second `agentrt up` on the same data dir would run a
        # second Temporal server on the same temporal.db and share the store; one on the
        # same ports would migrate, spawn, say it is up and then die on an address in use.
        self._lock = lock_data_dir(settings.resolved_data_dir)
        check_ports(self.ports_to_check())
        signal.signal(signal.SIGINT, self._signal)
        signal.signal(signal.SIGTERM, self._signal)
        settings.resolved_data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        with store.transaction() as session:
            if ensure_demo(session, "demo"):
                log.info("loaded the demo investigation into workspace 'demo'")
        store.dispose()
        try:
            address = asyncio.run(self.start_temporal())
            env = {
                **os.environ,
                **self.child_env,
                "TEMPORAL_ADDRESS": address,
                "AGENTRT_TEMPORAL_EMBEDDED": "true" if self.dev_server else "false",
            }
            env.pop("QWEN_SERVER_TOKEN", None)  # AGENTRT_TOKEN carries it, once
            self.spawn_child("worker", env)
            self.spawn_child("api", env)
            if not self.wait_api_ready():
                if self.stopping:
                    return 0
                log.error("the API did not come up; see %s", settings.resolved_data_dir / "api.log")
                return 1
            sys.stdout.write(self.banner(address))
            sys.stdout.flush()
            restarts: dict[str, list[float]] = {"worker": [], "api": []}
            while not self.stopping:
                time.sleep(0.2)
                if self.stopping:
                    break
                self.watch_temporal()
                for name, child in list(self.children.items()):
                    if child.poll() is None or self.stopping:
                        continue
                    recent = [t for t in restarts[name] if time.monotonic() - t < 60]
                    if len(recent) >= 5:
                        log.error("%s keeps exiting (code %s); stopping", name, child.returncode)
                        return 1
                    log.warning("%s exited with %s; restarting", name, child.returncode)
                    restarts[name] = [*recent, time.monotonic()]
                    self.spawn_child(name, env)
            return 0
        finally:
            # The API and the worker together (the API takes no new work at once; the
            # worker finishes its in-flight tasks), then Temporal, which they both need.
            stop_processes([self.children[n] for n in ("api", "worker") if n in self.children])
            for name in ("api", "worker"):
                self.pid_file(name).unlink(missing_ok=True)
            if self.dev_server is not None:
                self.dev_server.stop()
                self.pid_file("temporal").unlink(missing_ok=True)
            sys.stdout.write("agentrt stopped\n")
