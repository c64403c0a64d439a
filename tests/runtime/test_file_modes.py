"""agentrt's state is its user's only; the workspace's files are the user's (issue 18, item 9).

`private_process` sets umask 077 once, creates the data dir 0700 and tightens a loose one;
the workspace writers give new files 0644 and new directories 0755 whatever that umask,
with no per-write `os.umask`. Every command that may create state does it first (`agentrt
migrate` here, run for real); the real `agentrt up` is tests/e2e/test_security_gates.py.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.file_modes import private_process
from runtime.workspace.files import ABSENT, atomic_write, content_hash


@pytest.fixture
def private_umask() -> Iterator[None]:
    """Run the test under the processes' umask (077), the pytest process's back after."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_new_data_dir_is_private(tmp_path: Path, private_umask: None) -> None:
    data = tmp_path / "fresh" / ".data"
    assert private_process(data) == []
    assert _mode(data) == 0o700
    assert os.umask(0o077) == 0o077  # what every child inherits
    (data / "agentrt.db").write_bytes(b"")
    assert _mode(data / "agentrt.db") == 0o600


def test_a_loose_data_dir_is_tightened(tmp_path: Path, private_umask: None) -> None:
    data = tmp_path / ".data"
    (data / "credentials").mkdir(parents=True)
    (data / "workspace").mkdir()
    files = {
        "agentrt.db": 0o644,
        "agentrt.db-wal": 0o644,
        "temporal.db": 0o644,
        "api.log": 0o644,
        "temporal.pid": 0o644,
        "agentrt.lock": 0o664,
        "credentials/qwen-oauth.json": 0o600,
        "credentials/qwen-oauth.lock": 0o644,
        "workspace/README.md": 0o644,  # the user's, left alone
    }
    for name, mode in files.items():
        (data / name).write_text("x")
        (data / name).chmod(mode)
    for directory in (data, data / "credentials", data / "workspace"):
        directory.chmod(0o755)
    store = tmp_path / "elsewhere" / "store.db"
    store.parent.mkdir()
    store.write_text("x")
    store.chmod(0o644)

    tightened = private_process(data, f"sqlite:///{store}")
    assert _mode(data) == 0o700
    assert _mode(data / "credentials") == 0o700
    for name in files:
        expected = 0o644 if name.startswith("workspace/") else 0o600
        assert _mode(data / name) == expected, name
    assert _mode(data / "workspace") == 0o755
    assert _mode(store) == 0o600
    assert any(str(data) in line and "0755 -> 0700" in line for line in tightened)
    assert private_process(data, f"sqlite:///{store}") == []  # once tight, nothing to say


def test_workspace_files_get_the_users_modes(tmp_path: Path, private_umask: None) -> None:
    target = tmp_path / "project" / "src" / "new.py"
    (tmp_path / "project").mkdir()
    atomic_write(target, b"print(1)\n", expected=ABSENT)
    assert _mode(target) == 0o644
    assert _mode(target.parent) == 0o755
    # A replaced file keeps the bits its owner gave it.
    target.chmod(0o755)
    atomic_write(target, b"print(2)\n", expected=content_hash(b"print(1)\n"))
    assert _mode(target) == 0o755


def test_a_symlinked_data_dir_is_resolved_and_tightened(
    tmp_path: Path, private_umask: None
) -> None:
    target = tmp_path / "elsewhere" / "agentrt-data"
    target.mkdir(parents=True)
    target.chmod(0o755)
    (target / "agentrt.db").write_text("x")
    (target / "agentrt.db").chmod(0o644)
    link = tmp_path / ".data"
    link.symlink_to(target, target_is_directory=True)

    tightened = private_process(link)
    assert _mode(target) == 0o700
    assert _mode(target / "agentrt.db") == 0o600
    assert any(str(target) in line and "0755 -> 0700" in line for line in tightened)


def test_agentrt_migrate_creates_a_private_data_dir(tmp_path: Path) -> None:
    """`agentrt migrate` creates the SQLite store: under umask 077, in a 0700 data dir,
    even when the caller's umask is the usual 022 and no `up` ran before it."""
    data = tmp_path / "state" / ".data"
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AGENTRT_", "TEMPORAL_")) and k != "DATABASE_URL"
        },
        "AGENTRT_DATA_DIR": str(data),
        "AGENTRT_LOG_LEVEL": "WARNING",
    }
    previous = os.umask(0o022)  # what the child inherits, as from an ordinary shell
    try:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "cli", "migrate"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.umask(previous)
    assert done.returncode == 0, done.stderr
    assert "store at revision" in done.stdout
    assert _mode(data) == 0o700
    files = [path for path in data.rglob("*") if path.is_file()]
    assert data / "agentrt.db" in files
    loose = [f"{path} {_mode(path):04o}" for path in files if _mode(path) != 0o600]
    assert not loose, loose
