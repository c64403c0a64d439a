"""The `agentrt` command: `up` (everything), `api`, `worker`, `dev-server`, `migrate`,
`load-investigation`, `ledger verify` (check an agent ledger export offline).

Flags are named like the spec's daemon flags; each one is also read from the
environment as `AGENTRT_<FLAG>` (flags win). Start-up refusals print one line
on stderr and exit with 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, UnionType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Union, get_args, get_origin

from pydantic import ValidationError
from pydantic_core import PydanticUndefined

from runtime.file_modes import private_process
from runtime.settings import Flag, Settings
from runtime.startup import StartupRefusal, check_startup
from runtime.store.provision import DatabaseUnavailable, ensure_database

if TYPE_CHECKING:
    pass

log = logging.getLogger("agentrt")

EXIT_REFUSED = 2


def _flags(parser: argparse.ArgumentParser) -> None:
    """Every setting that carries a `Flag` (runtime/settings.py), as `--<name-with-dashes>`:
    its type, choices and default come from the setting itself."""
    for name, field in Settings.model_fields.items():
        flag = next((m for m in field.metadata if isinstance(m, Flag)), None)
        if flag is None:
            continue
        option = "--" + name.replace("_", "-")
        kind = _flag_type(field.annotation)
        said = flag.default
        if said is None and kind is not bool and field.default not in (None, PydanticUndefined):
            said = str(field.default)
        text = flag.help + (f" (default {said})" if said is not None else "")
        if kind is bool:
            if flag.negated:
                option = "--no-" + name.replace("_", "-")
            action = "store_false" if flag.negated else "store_true"
            parser.add_argument(option, dest=name, action=action, default=None, help=text)
        elif kind is list:
            parser.add_argument(option, dest=name, action="append", metavar=flag.metavar, help=text)
        elif isinstance(kind, tuple):
            parser.add_argument(option, dest=name, choices=list(kind), help=text)
        else:
            parser.add_argument(option, dest=name, type=kind, metavar=flag.metavar, help=text)


def _flag_type(annotation: Any) -> Any:
    """bool, list, a tuple of choices (a Literal), or the type a value is parsed with."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return _flag_type(args[0])
    if get_origin(annotation) is Literal:
        return tuple(get_args(annotation))
    if annotation is bool:
        return bool
    if get_origin(annotation) is list or annotation is list:
        return list
    if annotation in (int, Path):
        return annotation
    return None  # a string: argparse keeps it as given


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
        with store.transaction() as session:
            counts = load_investigation(session, workspace_id, data)
    except ValueError as err:
        sys.stderr.write(f"agentrt: {err}\n")
        return 1
    finally:
        store.dispose()
    summary = ", ".join(f"{count} {name}" for name, count in counts.items())
    sys.stdout.write(f"loaded {path} into workspace {workspace_id!r}: {summary}\n")
    return 0


def run_up(settings: Settings, *, exit_at_once: bool) -> int:
    from supervisor import Supervisor

    code = Supervisor(settings, settings_to_env(settings)).run()
    return _exit_now(code) if exit_at_once else code


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
        "up": lambda s: run_up(s, exit_at_once=argv is None),
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
