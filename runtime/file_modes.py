"""Who may read agentrt's state on this machine: its user only.

The data dir holds the store (stored API keys, transcripts), `temporal.db` (every
workflow's payloads), the logs and the device-flow credentials. `private_process` runs
once at the start of every `agentrt` command but `ledger verify` (which only reads the
file it is given): `up`, `api`, `worker`, `dev-server`, `migrate` and
`load-investigation` (cli.py), before anything is created. It sets the process umask to
077, inherited by every child (the worker, the API, the Temporal dev server), so
whatever the processes create is 0600 (a directory 0700) without a per-write `os.umask`
(which races between threads); it creates the data dir 0700, and tightens a data dir an
older agentrt (or another umask) left loose. A data dir that is a symlink is resolved
and its target tightened; a symlink inside it is never followed (a warning names it).
Files agentrt writes in the workspace are the user's, not agentrt's state, and get
ordinary modes instead (runtime/workspace/files.py).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Final

from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

PRIVATE_UMASK: Final = 0o077
PRIVATE_DIR_MODE: Final = 0o700
PRIVATE_FILE_MODE: Final = 0o600
# What agentrt keeps at the top of the data dir (not its default `workspace/`): the store
# and Temporal's database with their journals, the logs, the pid and lock files.
_OWN_FILES: Final = ("agentrt.db*", "temporal.db*", "*.log", "*.pid", "*.lock")
# Its directories of secrets: every file in them is private.
_SECRET_DIRS: Final = ("credentials", "device-flow")


def private_process(data_dir: Path, database_url: str | None = None) -> list[str]:
    """Set the umask, create the data dir 0700, tighten what is loose; what it tightened.

    Args:
        data_dir: agentrt's data dir (a symlink is resolved, and its target tightened).
        database_url: the store's: a SQLite file outside the data dir is tightened too,
            with its `<name>-*` companions (`-wal`, `-shm`, `-journal`); None, or
            another database, adds nothing.

    Returns:
        One `<path> (<old mode> -> <new mode>)` entry per path whose mode was tightened
        (also logged as one warning); empty when nothing was loose.
    """
    os.umask(PRIVATE_UMASK)
    data_dir.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    # A data dir that is a symlink (to another disk, say) is its target: tighten that, and
    # what is in it (`_tighten` itself never follows a symlink, of a file inside or not).
    data_dir = data_dir.resolve()
    tightened = _tighten(data_dir, PRIVATE_DIR_MODE)
    for pattern in _OWN_FILES:
        for path in sorted(data_dir.glob(pattern)):
            tightened += _tighten(path, PRIVATE_FILE_MODE)
    for name in _SECRET_DIRS:
        secrets_dir = data_dir / name
        tightened += _tighten(secrets_dir, PRIVATE_DIR_MODE)
        if _is_dir(secrets_dir):
            for path in sorted(secrets_dir.iterdir()):
                tightened += _tighten(path, PRIVATE_FILE_MODE)
    store = _sqlite_file(database_url)
    if store is not None:
        for path in (store, *store.parent.glob(f"{store.name}-*")):
            tightened += _tighten(path, PRIVATE_FILE_MODE)
    if tightened:
        log.warning(
            "tightened the modes of %s: other local users could read agentrt's state",
            ", ".join(tightened),
        )
    return tightened


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except FileNotFoundError:
        return False


def _tighten(path: Path, mode: int) -> list[str]:
    """chmod `path` to `mode` when it grants more (never through a symlink); what changed."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(info.st_mode):
        log.warning("not tightening %s: a symlink, not followed (tighten its target)", path)
        return []
    kind = stat.S_ISDIR if mode == PRIVATE_DIR_MODE else stat.S_ISREG
    current = stat.S_IMODE(info.st_mode)
    if not kind(info.st_mode) or not current & ~mode:
        return []
    try:
        os.chmod(path, mode)
    except PermissionError:  # another user's (a mounted volume): say so, start anyway
        log.warning("cannot tighten %s (%04o) to %04o: not its owner", path, current, mode)
        return []
    return [f"{path} ({current:04o} -> {mode:04o})"]


def _sqlite_file(database_url: str | None) -> Path | None:
    if not database_url:
        return None
    url = make_url(database_url)
    if not url.drivername.startswith("sqlite") or not url.database:
        return None
    if url.database == ":memory:":
        return None
    return Path(url.database).expanduser().resolve()
