"""The workspace fence (runtime/workspace/fence.py): every rule, and the attacks of issue 18.

- a symlink out (of the file, of a directory component), `..`, and the data dir inside
  the workspace are refused at the check;
- a directory component (or the file) swapped for a symlink between the check and the
  open is refused at the open, for reads and for writes, and nothing outside is touched;
- `..` segments in glob patterns are refused;
- FIFOs, sockets (and devices) are refused before they are opened, without blocking,
  even when one is swapped in after the stat.

No test may hang on a FIFO: every read of one runs on a daemon thread joined with a
bound, and a FIFO left blocking is released by opening its other end.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError
from runtime.workspace.files import ABSENT, HashMismatch, content_hash

BOUND_SECONDS = 20.0


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """ws/{README.txt, sub/inner.txt, escape_link, escape_dir, inside_link}, outside/."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "README.txt").write_text("hello\n")
    (ws / "sub" / "inner.txt").write_text("inner\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (outside / "inner.txt").write_text("outside inner\n")
    (ws / "escape_link").symlink_to(outside / "secret.txt")
    (ws / "escape_dir").symlink_to(outside, target_is_directory=True)
    (ws / "inside_link").symlink_to(ws / "README.txt")
    return ws


def refused(call: Callable[[], object], kind: str, status: int) -> FileError:
    with pytest.raises(FileError) as caught:
        call()
    assert (caught.value.kind, caught.value.status) == (kind, status), caught.value.message
    return caught.value


def bounded(call: Callable[[], Any], *, release: Path | None = None) -> Any:
    """`call()` on a daemon thread, joined within BOUND_SECONDS; a FIFO at `release` is
    opened for writing if it is still blocked, so nothing is left hanging."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as err:  # handed to the test
            box["error"] = err

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(BOUND_SECONDS)
    if worker.is_alive():
        if release is not None:
            try:
                os.close(os.open(release, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        pytest.fail(f"blocked for more than {BOUND_SECONDS} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


# -- the check ----------------------------------------------------------------------------


def test_resolve_follows_symlinks_inside_and_refuses_the_ones_out(tree: Path) -> None:
    fence = Fence.of(tree)
    assert fence.resolve("inside_link") == tree.resolve() / "README.txt"
    assert fence.resolve("sub/../README.txt") == tree.resolve() / "README.txt"
    assert fence.resolve(str(tree / "sub" / "inner.txt")) == tree.resolve() / "sub" / "inner.txt"
    escape = refused(lambda: fence.resolve("escape_link"), "symlink_escape", 400)
    assert escape.rule == "symlink_escape"
    # A symlinked directory component, not only the file's own link.
    refused(lambda: fence.resolve("escape_dir/secret.txt"), "symlink_escape", 400)
    outside = refused(lambda: fence.resolve("../outside/secret.txt"), "path_outside_workspace", 400)
    assert outside.rule == "outside_workspace"
    refused(lambda: fence.resolve("/etc/passwd"), "path_outside_workspace", 400)
    refused(lambda: fence.resolve("a\x00b"), "parse_error", 400)


def test_a_workspace_configured_through_a_symlink_accepts_both_spellings(
    tree: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tree, target_is_directory=True)
    fence = Fence.of(alias)
    assert fence.root == tree.resolve()
    for raw in (str(alias / "README.txt"), str(tree / "README.txt"), "README.txt"):
        assert fence.resolve(raw) == tree.resolve() / "README.txt"


def test_the_data_dir_inside_the_workspace_is_refused_with_403(tree: Path) -> None:
    data = tree / ".data"
    (data / "credentials").mkdir(parents=True)
    (data / "credentials" / "github.json").write_text('{"access_token": "t"}')
    (tree / "to_data").symlink_to(data / "credentials", target_is_directory=True)
    fence = Fence.of(tree, data)
    for raw in (".data", ".data/credentials/github.json", "to_data/github.json", ".data/new"):
        error = refused(functools.partial(fence.resolve, raw), "permission_denied", 403)
        assert error.rule == "data_dir"
    assert not fence.contains(data.resolve() / "agentrt.db")
    assert fence.resolve("README.txt") == tree.resolve() / "README.txt"


def test_a_workspace_inside_the_data_dir_is_served(tmp_path: Path) -> None:
    """`make run`'s default: the workspace is `<data-dir>/workspace`."""
    data = tmp_path / ".data"
    (data / "workspace").mkdir(parents=True)
    (data / "workspace" / "a.txt").write_text("a\n")
    fence = Fence.of(data / "workspace", data)
    assert fence.data_dir is None
    assert fence.read(fence.resolve("a.txt"), limit=10) == b"a\n"


@pytest.mark.parametrize("pattern", ["../*", "../outside/**", "src/../../x", "..", "a/.."])
def test_patterns_with_dotdot_segments_are_refused(pattern: str) -> None:
    error = refused(lambda: Fence.pattern(pattern), "path_outside_workspace", 400)
    assert "`..`" in error.message


@pytest.mark.parametrize("pattern", ["*.py", "**/*.txt", "a..b/*", "..a", "src/..x/*"])
def test_patterns_without_dotdot_segments_pass(pattern: str) -> None:
    assert Fence.pattern(pattern) == pattern


def test_absolute_patterns_are_refused() -> None:
    refused(lambda: Fence.pattern("/etc/*"), "parse_error", 400)


# -- the open: a symlink swapped in after the check is never followed --------------------


@pytest.fixture
def swap(tree: Path) -> Iterator[Callable[[Path, Path], None]]:
    """Replace `path` (a directory or a file) with a symlink to `target`."""

    def do(path: Path, target: Path) -> None:
        if path.is_dir() and not path.is_symlink():
            path.rename(path.with_name(path.name + ".moved"))
        else:
            path.unlink()
        path.symlink_to(target, target_is_directory=target.is_dir())

    yield do


def test_a_directory_component_swapped_after_the_check_is_not_followed(
    tree: Path, swap: Callable[[Path, Path], None]
) -> None:
    fence = Fence.of(tree)
    checked = fence.resolve("sub/inner.txt")
    outside = tree.parent / "outside"
    swap(tree / "sub", outside)  # between the check and the open
    assert (tree / "sub" / "inner.txt").read_text() == "outside inner\n"  # the attack
    error = refused(lambda: fence.read(checked, limit=100), "symlink_escape", 400)
    assert error.rule == "symlink_swapped"
    refused(lambda: fence.lstat(checked), "symlink_escape", 400)
    refused(lambda: fence.entries(fence.root / "sub"), "symlink_escape", 400)
    refused(lambda: fence.file_hash(checked), "symlink_escape", 400)
    # Writes walk the same way: nothing lands outside.
    refused(lambda: fence.write(checked, b"pwned"), "symlink_escape", 400)
    refused(lambda: fence.write(checked, b"pwned", parents=True), "symlink_escape", 400)
    assert (outside / "inner.txt").read_text() == "outside inner\n"
    assert sorted(p.name for p in outside.iterdir()) == ["inner.txt", "secret.txt"]


def test_the_file_itself_swapped_after_the_check_is_not_followed(
    tree: Path, swap: Callable[[Path, Path], None]
) -> None:
    fence = Fence.of(tree)
    checked = fence.resolve("README.txt")
    swap(tree / "README.txt", tree.parent / "outside" / "secret.txt")
    error = refused(lambda: fence.read(checked, limit=100), "symlink_escape", 400)
    assert error.rule == "symlink_swapped"
    # A compare-and-swap on it fails (the link is not the file that was judged)...
    with pytest.raises(HashMismatch):
        fence.write(checked, b"x", expected=content_hash(b"hello\n"))
    assert (tree.parent / "outside" / "secret.txt").read_text() == "secret\n"
    # ...and a plain write replaces the link itself, never writes through it.
    fence.write(checked, b"mine\n")
    assert not (tree / "README.txt").is_symlink()
    assert (tree / "README.txt").read_bytes() == b"mine\n"
    assert (tree.parent / "outside" / "secret.txt").read_text() == "secret\n"


def test_a_swap_through_the_resolve_hook_is_refused(
    tree: Path, swap: Callable[[Path, Path], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race as an attacker runs it: the swap lands right after the check returns."""
    original = Fence.resolve

    def racing(self: Fence, raw: str) -> Path:
        checked = original(self, raw)
        swap(tree / "sub", tree.parent / "outside")
        return checked

    monkeypatch.setattr(Fence, "resolve", racing)
    fence = Fence.of(tree)
    refused(lambda: fence.read(fence.resolve("sub/inner.txt"), limit=100), "symlink_escape", 400)


# -- reads, listings and writes through the fence ----------------------------------------


def test_reads_are_bounded_and_listings_never_follow(tree: Path) -> None:
    fence = Fence.of(tree)
    readme = fence.resolve("README.txt")
    assert fence.read(readme, limit=6) == b"hello\n"
    refused(lambda: fence.read(readme, limit=5), "file_too_large", 413)
    kinds = {e.name: e.kind for e in fence.entries(fence.root)}
    assert kinds == {
        "README.txt": "file",
        "sub": "directory",
        "escape_link": "symlink",
        "escape_dir": "symlink",
        "inside_link": "symlink",
    }
    assert len(fence.entries(fence.root, limit=2)) == 3  # one more than the limit
    refused(lambda: fence.read(fence.root / "sub", limit=10), "parse_error", 400)
    refused(lambda: fence.read(fence.root / "nope", limit=10), "path_not_found", 404)
    assert fence.file_hash(fence.root / "nope") == ABSENT
    assert fence.file_hash(readme) == content_hash(b"hello\n")


def test_writes_are_atomic_compare_and_swap_in_the_parent_descriptor(tree: Path) -> None:
    fence = Fence.of(tree)
    target = fence.resolve("sub/new.txt")
    fence.write(target, b"one", expected=ABSENT)
    with pytest.raises(HashMismatch):
        fence.write(target, b"two", expected=ABSENT)
    fence.write(target, b"two", expected=content_hash(b"one"))
    assert target.read_bytes() == b"two"
    refused(lambda: fence.write(fence.resolve("a/b/c.txt"), b"x"), "path_not_found", 404)
    fence.write(fence.resolve("a/b/c.txt"), b"x", parents=True)
    assert (tree / "a" / "b" / "c.txt").read_bytes() == b"x"
    assert not [p for p in tree.rglob(".agentrt-*")]


def test_a_new_directory_under_a_symlink_out_is_never_made(tree: Path) -> None:
    fence = Fence.of(tree)
    refused(lambda: fence.resolve("escape_dir/new/x.txt"), "symlink_escape", 400)
    outside = tree.parent / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["inner.txt", "secret.txt"]


# -- non-regular files ---------------------------------------------------------------------


def test_a_fifo_is_refused_without_blocking(tree: Path) -> None:
    fifo = tree / "pipe"
    os.mkfifo(fifo)
    fence = Fence.of(tree)
    checked = fence.resolve("pipe")
    with pytest.raises(FileError) as caught:
        bounded(lambda: fence.read(checked, limit=100), release=fifo)
    assert caught.value.kind == "parse_error" and caught.value.rule == "not_regular"
    assert "a FIFO" in caught.value.message
    with pytest.raises(FileError):
        bounded(lambda: fence.file_hash(checked), release=fifo)
    with pytest.raises(HashMismatch):  # a compare-and-swap never reads it either
        bounded(lambda: fence.write(checked, b"x", expected=ABSENT), release=fifo)
    assert {e.name: e.kind for e in fence.entries(fence.root)}["pipe"] == "other"


def test_six_fifos_read_at_once_all_fail_fast(tree: Path) -> None:
    """The issue's pool exhaustion: six blocked reads were six threads lost for good."""
    fence = Fence.of(tree)
    fifos = []
    for i in range(6):
        os.mkfifo(tree / f"pipe{i}")
        fifos.append(fence.resolve(f"pipe{i}"))
    for i, fifo in enumerate(fifos):
        with pytest.raises(FileError):
            bounded(functools.partial(fence.read, fifo, limit=10), release=tree / f"pipe{i}")


def test_a_socket_is_refused(tree: Path) -> None:
    path = tree / "sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        fence = Fence.of(tree)
        error = refused(lambda: fence.read(fence.resolve("sock"), limit=10), "parse_error", 400)
        assert "a socket" in error.message
    finally:
        server.close()


def test_a_device_is_refused(tree: Path) -> None:
    if not Path("/dev/null").exists():
        pytest.skip("no /dev/null")
    fence = Fence.trusted(Path("/dev"))
    error = refused(lambda: fence.read(Path("/dev/null"), limit=10), "parse_error", 400)
    assert "a device" in error.message


def test_a_fifo_swapped_in_after_the_stat_is_caught_on_the_descriptor(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lstat said "regular file" (a FIFO took its place since): the O_NONBLOCK open
    returns at once and the fstat of the descriptor refuses it."""
    fifo = tree / "pipe"
    os.mkfifo(fifo)
    regular = os.stat(tree / "README.txt")
    real_stat = os.stat

    def stale(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return regular if path == "pipe" else real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stale)  # the module's `os.stat`, for this test
    fence = Fence.of(tree)
    with pytest.raises(FileError) as caught:
        bounded(lambda: fence.read(fence.root / "pipe", limit=10), release=fifo)
    assert caught.value.rule == "not_regular"


def test_the_fence_and_its_refusals_import_only_the_standard_library() -> None:
    """The search child runs under `python -I` with only this checkout on its path: the
    fence, its refusals and what they import must be the standard library's."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); before = set(sys.modules); "
        "import runtime.workspace.fence, runtime.workspace.file_errors, "
        "runtime.workspace.search_child; "
        "third = sorted({m.split('.')[0] for m in set(sys.modules) - before} "
        "- set(sys.stdlib_module_names) - {'runtime'}); "
        "print(','.join(third))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == ""
