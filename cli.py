"""The `agentrt` command: `up` (everything), `api`, `worker`, `dev-server`, `migrate`,
`load-investigation`, `ledger verify` (check an agent ledger export offline).

Flags are named like the spec's daemon flags; each one is also read from the
environment as `AGENTRT_<FLAG>` (flags win). Start-up refusals print one line
on stderr and exit with 2.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, NoReturn

import httpx
from pydantic import ValidationError

from runtime.file_modes import private_process
from runtime.settings import Settings, StartupRefusal, check_startup
from runtime.store.provision import DatabaseUnavailable, ensure_database

if TYPE_CHECKING:
    from runtime.temporal import DevServer

log = logging.getLogger("agentrt")

EXIT_REFUSED = 2


def _flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--hostname", help="address to bind (default 127.0.0.1)")
    add("--port", type=int, help="API port (default 4170)")
    add("--token", help="bearer token (prefer QWEN_SERVER_TOKEN: flags show in `ps`)")
    add(
        "--require-auth",
        action="store_true",
        default=None,
        help="demand the bearer on every route, loopback /health included",
    )
    add(
        "--allow-origin",
        action="append",
        metavar="PATTERN",
        help="admit a browser origin (repeatable; '*' needs a token)",
    )
    add(
        "--workspace",
        type=Path,
        help="the directory session agents work in (default: <data-dir>/workspace)",
    )
    add("--max-sessions", type=int, help="live session cap (default 20)")
    add("--max-pending-prompts-per-session", type=int, help="prompt queue bound (default 5)")
    add("--event-ring-size", type=int, help="events kept per stream for replay (default 8000)")
    add(
        "--rate-limit",
        action="store_true",
        default=None,
        help="turn on per-client token-bucket rate limiting",
    )
    add("--data-dir", type=Path, help="where the store and Temporal keep state (default .data)")
    add("--temporal-port", type=int, help="embedded Temporal frontend port (default 7233)")
    add("--temporal-ui-port", type=int, help="embedded Temporal Web UI port (default 8233)")
    add(
        "--no-temporal-ui",
        dest="temporal_ui",
        action="store_false",
        default=None,
        help="run the embedded Temporal dev server without its Web UI (it has no auth)",
    )
    add(
        "--permission-policy",
        choices=["first-responder", "designated", "consensus", "local-only"],
        help="who decides a permission request (default first-responder)",
    )
    add(
        "--permission-response-timeout-ms",
        type=int,
        help="permission requests resolve as cancelled after this (default 300000; 0 = never)",
    )
    add("--prompt-deadline-ms", type=int, help="cap on a prompt's run time (default none)")
    add(
        "--max-prompt-bytes",
        type=int,
        help="largest prompt text accepted, in UTF-8 bytes; larger ones get 413 (default 1048576)",
    )
    add(
        "--session-shell",
        action="store_true",
        default=None,
        help="give session agents the run_shell_command tool",
    )
    add(
        "--memory-file-name",
        help="the workspace memory file POST /workspace/init creates (default AGENTS.md)",
    )
    add(
        "--mcp-client-budget",
        type=int,
        help="MCP servers a worker keeps connected per workspace (default: no budget)",
    )
    add(
        "--mcp-budget-mode",
        choices=["warn", "enforce", "off"],
        help="past the MCP client budget: warn, or refuse in declaration order (enforce)",
    )
    add(
        "--model-provider",
        choices=["scripted", "openai"],
        help="model behind the agents: scripted (built in, default) or openai "
        "(OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentrt", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("up", "run the embedded Temporal dev server, the worker and the API"),
        ("api", "run the API only"),
        ("worker", "run the Temporal worker only"),
        ("dev-server", "run the embedded Temporal dev server only"),
        ("migrate", "apply the store's migrations and exit"),
    ):
        _flags(commands.add_parser(name, help=text, description=text))
    text = "load an investigation (JSON, see the README) into a workspace, replacing its data"
    load = commands.add_parser("load-investigation", help=text, description=text)
    load.add_argument("file", type=Path, metavar="FILE.json")
    load.add_argument("--workspace-id", default="demo", help="workspace to load (default demo)")
    _flags(load)
    text = "check a standing agent's ledger export (NDJSON, oldest turn first) offline"
    ledger = commands.add_parser("ledger", help=text, description=text)
    ledger_commands = ledger.add_subparsers(dest="ledger_command", required=True)
    verify = ledger_commands.add_parser("verify", help=text, description=text)
    verify.add_argument("file", type=Path, metavar="FILE")
    verify.add_argument(
        "--partial",
        action="store_true",
        help="the file is a segment: trust the first turn's prevHash instead of requiring null",
    )
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for name in Settings.model_fields:
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    return Settings(**overrides)


def settings_to_env(settings: Settings) -> dict[str, str]:
    """The environment that gives a child process exactly these settings."""
    env: dict[str, str] = {}
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        key = alias.choices[0] if alias is not None and hasattr(alias, "choices") else None
        key = str(key) if key else f"AGENTRT_{name.upper()}"
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, bool):
            env[key] = "true" if value else "false"
        elif isinstance(value, list):
            env[key] = ",".join(str(v) for v in value)
        elif isinstance(value, Path):
            env[key] = str(value.expanduser().resolve())
        else:
            env[key] = str(value)
    return env


def _configure_logging() -> None:
    logging.basicConfig(
        level=os.environ.get("AGENTRT_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # httpx2: the MCP SDK's HTTP client, which logs every request URL (query included).
    for noisy in ("alembic", "httpx", "httpx2", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


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


def _prepare_workspace(settings: Settings) -> None:
    """Create the default workspace under the data dir (a user's own must exist)."""
    if settings.workspace is None:
        settings.resolved_workspace.mkdir(parents=True, exist_ok=True)


# -- single parts ------------------------------------------------------------------------


def run_api(settings: Settings) -> int:
    import uvicorn

    from api.app import create_app
    from api.sse import stream_shutdown
    from runtime.collector import tune_collector

    app = create_app(settings, temporal_embedded=settings.temporal_embedded)
    streams = stream_shutdown(app)
    tune_collector()

    class ApiServer(uvicorn.Server):
        """uvicorn that ends SSE streams as soon as it is asked to stop: they never end
        on their own, and its graceful shutdown would otherwise wait its whole timeout."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            streams.close_all()

    config = uvicorn.Config(
        app,
        host=settings.hostname.strip("[]"),
        port=settings.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        # The peer address is the TCP peer's: with proxy headers on, uvicorn would take
        # it from `X-Forwarded-For` of any loopback caller, and a brute-forcer could name
        # a new address per guess (api/security/bearer.py counts failures per address).
        proxy_headers=False,
    )
    ApiServer(config).run()
    return 0


def run_worker_command(settings: Settings) -> int:
    from runtime.collector import tune_collector
    from worker import run_worker

    tune_collector()
    asyncio.run(run_worker(settings))
    return 0


def run_dev_server(settings: Settings) -> int:
    from runtime.temporal import DevServer, temporal_child_env

    server = DevServer(settings)
    settings.resolved_data_dir.mkdir(parents=True, exist_ok=True)
    command = server.command()
    # The dev server handles its own signals.
    os.execve(command[0], command, temporal_child_env())


def run_migrate(settings: Settings) -> int:
    from runtime.store import Store, upgrade_to_head

    store = Store(settings.resolved_database_url)
    revision = upgrade_to_head(store.engine)
    sys.stdout.write(f"store at revision {revision}\n")
    return 0


def run_load_investigation(settings: Settings, path: Path, workspace_id: str) -> int:
    """Migrate the store, then replace `workspace_id`'s investigation data with the file's."""
    from runtime.investigation.loader import load_investigation, read_investigation_file
    from runtime.store import Store, upgrade_to_head

    store = Store(settings.resolved_database_url)
    try:
        upgrade_to_head(store.engine)
        data = read_investigation_file(path)
        with store.session() as session:
            counts = load_investigation(session, workspace_id, data)
    except ValueError as err:
        sys.stderr.write(f"agentrt: {err}\n")
        return 1
    finally:
        store.dispose()
    summary = ", ".join(f"{count} {name}" for name, count in counts.items())
    sys.stdout.write(f"loaded {path} into workspace {workspace_id!r}: {summary}\n")
    return 0


# -- up: the supervisor ------------------------------------------------------------------


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

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
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
        with store.session() as session:
            if ensure_demo(session, "demo"):
                log.info("loaded the demo investigation into workspace 'demo'")
        store.dispose()
        try:
            address = asyncio.run(self.start_temporal())
            env = {
                **os.environ,
                **settings_to_env(settings),
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


def _exit_now(code: int) -> NoReturn:
    """Leave as soon as `up` has stopped everything: its children are gone and its output
    flushed, and the interpreter's teardown of the Temporal SDK's native runtime only adds
    time (and can crash, sdk-python issue 300). Only for the real command (`argv` None)."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def run_ledger_verify(path: Path, *, partial: bool) -> int:
    """`agentrt ledger verify FILE`: 0 when the chain holds, 1 when broken, 2 when unreadable.

    Needs no settings, store or server: the chain is checked from the file alone.
    """
    from runtime.standing_agents.ledger_chain import verify_chain

    turns: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    turn = json.loads(line)
                except ValueError as err:
                    sys.stderr.write(f"agentrt: {path}: line {number}: bad JSON: {err}\n")
                    return EXIT_REFUSED
                if not isinstance(turn, dict):
                    sys.stderr.write(f"agentrt: {path}: line {number}: not a JSON object\n")
                    return EXIT_REFUSED
                turns.append(turn)
    except (OSError, UnicodeDecodeError) as err:
        sys.stderr.write(f"agentrt: cannot read {path}: {err}\n")
        return EXIT_REFUSED
    verdict = verify_chain(turns, require_genesis=not partial)
    if verdict.ok:
        sys.stdout.write(f"ok: {verdict.count} turns, head {verdict.head or 'none'}\n")
        return 0
    where = verdict.first_bad_seq if verdict.first_bad_seq is not None else f"#{verdict.count}"
    sys.stdout.write(f"broken at seq {where}: {verdict.reason}\n")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "ledger":
        # An offline check: no settings, database or Temporal (a verifier's machine has none).
        return run_ledger_verify(args.file, partial=args.partial)
    _configure_logging()
    try:
        settings = settings_from_args(args)
        for warning in check_startup(settings):
            sys.stderr.write(f"agentrt: warning: {warning}\n")
    except StartupRefusal as refusal:
        sys.stderr.write(f"agentrt: {refusal}\n")
        return EXIT_REFUSED
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()
        )
        sys.stderr.write(f"agentrt: invalid settings: {problems}\n")
        return EXIT_REFUSED
    # Every command from here on may create agentrt's state (`migrate` and
    # `load-investigation` create the SQLite store; `ledger verify`, above, only reads the
    # file it is given). Once, before anything is created: the umask every child
    # inherits, the data dir 0700, and what an older start left loose tightened
    # (runtime/file_modes.py).
    private_process(settings.resolved_data_dir, settings.resolved_database_url)
    if args.command != "dev-server":
        try:
            # A PostgreSQL database that does not exist yet is created (or one line says
            # what to run) before anything tries to migrate it.
            if ensure_database(settings.resolved_database_url):
                sys.stderr.write("agentrt: created the store's database\n")
        except DatabaseUnavailable as err:
            sys.stderr.write(f"agentrt: {err}\n")
            return EXIT_REFUSED
    if args.command in ("up", "api", "worker"):
        _prepare_workspace(settings)
    handlers: dict[str, Callable[[Settings], int]] = {
        "up": lambda s: _exit_now(Supervisor(s).run()) if argv is None else Supervisor(s).run(),
        "api": run_api,
        "worker": run_worker_command,
        "dev-server": run_dev_server,
        "migrate": run_migrate,
        "load-investigation": lambda s: run_load_investigation(s, args.file, args.workspace_id),
    }
    try:
        return int(handlers[args.command](settings))
    except StartupRefusal as refusal:
        sys.stderr.write(f"agentrt: {refusal}\n")
        return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main())
