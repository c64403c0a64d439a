"""The fence of the `auto` shell rule (activities.workspace.previews.shell_fenced): what a
command's paths and program resolve to, which the pure allow-list cannot see."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from activities.workspace import shell_fenced
from runtime.llm.contracts import ToolCall

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # rg may not be installed: a stand-in outside the workspace, found on PATH.
    system_bin = tmp_path / "system-bin"
    system_bin.mkdir()
    (system_bin / "rg").write_text("#!/bin/sh\n")
    (system_bin / "rg").chmod(0o755)
    monkeypatch.setenv("PATH", f"{system_bin}{os.pathsep}{SYSTEM_PATH}")
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("key = 1\n")
    (root / ".data" / "credentials").mkdir(parents=True)
    (root / ".data" / "credentials" / "openai.json").write_text('{"token": "secret"}\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text("PRIVATE KEY\n")
    (root / "key").symlink_to(outside / "id_rsa")
    (root / "out").symlink_to(outside)
    (root / "inner").symlink_to(root / "src")
    return root


def fenced(ws: Path, command: object, data_dir: Path | None = None) -> bool | None:
    call = ToolCall(id="c1", name="run_shell_command", arguments={"command": command})
    return shell_fenced(ws, ws / ".data" if data_dir is None else data_dir, call)


@pytest.mark.parametrize(
    "command",
    [
        "cat src/a.py",
        "cat inner/a.py",  # a symlink that stays inside
        "ls",
        "ls .",  # names only, not recursive: the data dir's name is no secret
        "ls -la src",
        "grep -rn key src",
        "rg key src",
        "wc -l src/a.py missing.txt",  # a missing file: the command fails on its own
        "echo hi",
        "pwd",
    ],
)
def test_commands_that_stay_inside_pass(ws: Path, command: str) -> None:
    assert fenced(ws, command) is True


@pytest.mark.parametrize(
    "command",
    [
        "cat key",  # a symlink to a file outside
        "cat out/id_rsa",  # through a symlinked directory
        "ls out",
        "grep -rn KEY out",
        "cat .data/credentials/openai.json",  # the daemon's data dir inside the workspace
        "ls .data",
        "grep -rn token .",  # recursive over a directory holding the data dir
        "grep -r token",
        "rg token",
        "ls -R",
        "cat $HOME/.ssh/id_rsa",  # refused by the allow-list itself
        "python3 x.py",
    ],
)
def test_commands_that_reach_out_are_not_fenced(ws: Path, command: str) -> None:
    assert fenced(ws, command) is False


def test_the_data_dir_only_matters_inside_the_workspace(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "data"
    assert fenced(ws, "grep -rn token .", data_dir=elsewhere) is True
    # The default layout: the workspace inside the data dir.
    assert fenced(ws, "grep -rn token .", data_dir=ws.parent) is True


@pytest.mark.parametrize(
    "path",
    [
        f"bin:{SYSTEM_PATH}",  # relative: looked up from the workspace
        f":{SYSTEM_PATH}",  # empty: the workspace itself
        f"{SYSTEM_PATH}:.",
        "{ws}/tools:" + SYSTEM_PATH,  # an entry inside the workspace
        "/nonexistent",  # the program is not found at all
    ],
)
def test_a_path_into_the_workspace_is_not_fenced(
    ws: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    (ws / "tools").mkdir()
    monkeypatch.setenv("PATH", path.replace("{ws}", str(ws)))
    assert fenced(ws, "cat src/a.py") is False
    # A builtin of /bin/sh is not looked up.
    assert fenced(ws, "echo hi") is True


def test_a_program_planted_in_the_workspace_is_not_fenced(
    ws: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    planted = ws / "cat"
    planted.write_text("#!/bin/sh\nid\n")
    planted.chmod(0o755)
    (bin_dir / "cat").symlink_to(planted)  # a PATH entry outside, its program inside
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{SYSTEM_PATH}")
    assert fenced(ws, "cat src/a.py") is False


def test_other_tools_and_bad_arguments(ws: Path) -> None:
    read = ToolCall(id="c1", name="read_file", arguments={"file_path": "src/a.py"})
    assert shell_fenced(ws, ws / ".data", read) is None
    assert fenced(ws, None) is False
    assert fenced(ws, ["cat", "a"]) is False
    assert fenced(ws.parent / "missing", "cat a") is False
