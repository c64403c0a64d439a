"""agentrt's coder's own directory (activities/coding_tasks/task.task_workspace): a git worktree
of the workspace root when it is a repository, a plain directory otherwise; made once."""

from __future__ import annotations

import subprocess
from pathlib import Path

from activities.coding_tasks.task import task_workspace

GIT = ["git", "-c", "user.name=agentrt tests", "-c", "user.email=tests@agentrt.invalid"]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run([*GIT, "-C", str(root), *args], check=True, capture_output=True)
    return done.stdout.decode()


async def test_a_repository_root_gives_each_task_a_worktree_its_status_does_not_list(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "README").write_text("hello\n")
    _git(root, "add", "README")
    _git(root, "commit", "-q", "-m", "first")
    first = await task_workspace(root, "t-1")
    second = await task_workspace(root, "t-2")
    assert first == root / ".agentrt-tasks" / "t-1"
    assert (first / "README").read_text() == "hello\n"  # a checkout of HEAD
    (first / "edit.txt").write_text("mine\n")
    assert not (second / "edit.txt").exists()  # two tasks never write into each other
    listed = _git(root, "worktree", "list", "--porcelain")
    assert f"worktree {first}" in listed and f"worktree {second}" in listed
    # The repository's own status stays clean: the tasks' directory is excluded locally.
    assert _git(root, "status", "--porcelain") == ""
    assert (await task_workspace(root, "t-1")) == first  # again: the same directory
    excluded = (root / ".git" / "info" / "exclude").read_text().splitlines()
    assert excluded.count("/.agentrt-tasks/") == 1


async def test_a_plain_root_gives_each_task_a_directory(tmp_path: Path) -> None:
    made = await task_workspace(tmp_path, "t-1")
    assert made == tmp_path / ".agentrt-tasks" / "t-1" and made.is_dir()
    assert not (made / ".git").exists()
