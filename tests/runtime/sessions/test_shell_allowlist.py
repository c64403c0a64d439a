"""The `auto` mode's shell allow-list: every walk-around of the old deny-list asks, and a
table of read-only commands stays auto-allowed (runtime.sessions.shell_allowlist)."""

from __future__ import annotations

import pytest

from runtime.sessions.approval_modes import needs_permission
from runtime.sessions.approval_modes_v0 import needs_permission_v0
from runtime.sessions.shell_allowlist import PROGRAMS, check_shell_command

WS = "/home/u/project"

# Issue 18, item 10: each of these passed the deny-list; each must ask.
ISSUE_EXAMPLES = [
    "cat $HOME/.ssh/id_rsa",
    "python3 x.py",  # after an auto-allowed write of x.py
    "git -c alias.x='!id' x",
    "awk 'BEGIN{system(\"id\")}'",
    "find . -exec id ;",
    "find . -exec id {} +",
    "find src -exec id {} +",
    "xargs id",
    "env X=1 sh",
    "echo $(id)",
    "echo `id`",
]

# More of the same families: the shell's syntax, programs that run others, options that
# execute, write or follow, paths that leave the workspace.
MORE_ATTACKS = [
    # substitution, expansion and quoting
    'cat "$(id)"',
    'cat "`id`"',
    'cat "$HOME/.ssh/id_rsa"',
    "cat '$HOME'",
    "cat ${HOME}/.ssh/id_rsa",
    "cat ~/.ssh/id_rsa",
    "cat '~/.ssh/id_rsa'",
    'cat "a\\"b"',
    "cat \\$HOME",
    "cat 'unterminated",
    "cat ''",
    # lists, pipes, redirections, jobs, subshells, groups, comments, globs, history
    "ls; id",
    "ls && id",
    "ls || id",
    "ls | sh",
    "ls | xargs rm",
    "cat a > b",
    "cat a >> b",
    "cat < /etc/passwd",
    "cat a 2>&1",
    "ls &",
    "ls\nid",
    "ls\rid",
    "(id)",
    "{ id; }",
    "ls # comment",
    "cat *",
    "cat ?",
    "cat [ab]",
    "!id",
    "ls <(id)",
    # programs that run others, or are not read-only
    "X=1 cat a",
    "LD_PRELOAD=./evil.so cat a",
    "env",
    "sh -c id",
    "bash -c id",
    "python -c 'import os'",
    "python3 -m http.server",
    "perl -e 'system(1)'",
    "node -e 'process.exit()'",
    "sed -e 's/a/b/e' a",
    "sed -i s/a/b/ a",
    "awk -f x.awk a",
    "find . -delete",
    "find . -name a",
    "command cat a",
    "exec cat a",
    "eval ls",
    "nohup ls",
    "timeout 1 ls",
    "nice ls",
    "sudo ls",
    "time ls",
    "make",
    "npm test",
    "touch a",
    "rm -rf build",
    "curl https://example.com",
    "sort -o out a",
    "sort --compress-program=sh a",
    "tee a",
    "less a",
    "vi a",
    "git status",
    "git log",
    "git diff",
    "git show HEAD",
    "git --upload-pack=id fetch",
    "git log --exec=id",
    "/bin/cat a",
    "./cat a",
    "bin/cat a",
    "'cat a'",
    # options that execute, write, follow symlinks, never end, or are abbreviations
    "rg --pre sh x",
    "rg --pre=sh x",
    "rg --pre-glob '*' x",
    "rg -z x",
    "rg --search-zip x",
    "rg -L x",
    "rg --follow x",
    "rg --hostname-bin=id x",
    "grep -R x .",
    "grep --dereference-recursive x .",
    "grep -d recurse x .",
    "grep --exclude-from=list x a",
    "tail -f a",
    "tail -F a",
    "tail --follow a",
    "wc --files0-from=list",
    "wc --files0-from list",
    "head --lin=5 a",
    "ls -L",
    "ls --dereference",
    "ls --hyperlink",
    "ls -w 80",
    "cat -e a",
    "echo -e '\\x41'",
    "pwd x",
    "grep",
    "grep -e",
    "head -n",
    "head -n five a",
    "head -n=5 a",
    # paths out of the workspace, read lexically
    "cat /etc/passwd",
    f"cat {WS}/../secret",
    f"cat {WS}x/a",
    "cat /home/u/project2/a",
    "cat ../secret.txt",
    "cat a/../../secret",
    "cat src/../a",
    "cat ..",
    "ls ..",
    "ls /",
    "grep -f /etc/shadow x a",
    "grep --file=../patterns x a",
    "grep x /etc/passwd",
    "rg x /",
    "wc -l //etc/passwd",
    "cat -- /etc/passwd",
    "ls -- ../",
    # not ASCII outside quotes, control characters
    "cat \u00e9",
    "cat a\x00",
    "cat a\x1b[2J",
    "",
    "   ",
]


@pytest.mark.parametrize("command", ISSUE_EXAMPLES + MORE_ATTACKS)
def test_every_walk_around_asks(command: str) -> None:
    check = check_shell_command(command, WS)
    assert not check.allowed, check
    assert check.reason
    # The mode asks even when the fence would have passed it.
    decision = needs_permission(
        "auto", "run_shell_command", command=command, workspace=WS, fenced=True
    )
    assert decision == "ask"


# What the deny-list of before let run (some of the issue's examples it caught as written:
# `find . -exec` by its `. `, `xargs`, `env`, `$(...)` and backticks by name).
OLD_RULE_WALK_AROUNDS = [
    "cat $HOME/.ssh/id_rsa",
    'cat "$HOME/.ssh/id_rsa"',
    "python3 x.py",
    "git -c alias.x='!id' x",
    "awk 'BEGIN{system(\"id\")}'",
    "find src -exec id {} +",
    "X=1 sh",
    "LD_PRELOAD=./evil.so cat a",
    "sort --compress-program=sh a",
    "rg --pre=sh x",
]


@pytest.mark.parametrize("command", OLD_RULE_WALK_AROUNDS)
def test_the_walk_arounds_passed_the_old_deny_list(command: str) -> None:
    """The walk-arounds are real: the replay-only rule of before lets them run unasked."""
    assert needs_permission_v0("auto", "run_shell_command", command=command) == "allow"
    assert not check_shell_command(command, WS).allowed


# command → (paths it opens, recursive): these stay auto-allowed (once the fence agrees).
ALLOWED: dict[str, tuple[tuple[str, ...], bool]] = {
    "ls": ((), False),
    "ls -la": ((), False),
    "ls -la src": (("src",), False),
    "ls -1 src tests": (("src", "tests"), False),
    "ls -R src": (("src",), True),
    "ls -R": ((".",), True),
    "ls --all --recursive docs": (("docs",), True),
    "cat README.md": (("README.md",), False),
    "cat -n src/a.py": (("src/a.py",), False),
    'cat "my notes.txt"': (("my notes.txt",), False),
    "cat 'a;b|c.txt'": (("a;b|c.txt",), False),
    "cat -": (("-",), False),
    f"cat {WS}/src/a.py": ((f"{WS}/src/a.py",), False),
    f"ls {WS}": ((WS,), False),
    "cat ./src/a.py": (("./src/a.py",), False),
    "cat .hidden/x": ((".hidden/x",), False),
    "cat -- -dash-file": (("-dash-file",), False),
    "head a.txt": (("a.txt",), False),
    "head -n 20 src/a.py": (("src/a.py",), False),
    "head -n20 a": (("a",), False),
    "head -20 a": (("a",), False),
    "head -c 100 a": (("a",), False),
    "head --lines=5 a b": (("a", "b"), False),
    "tail -n +5 a": (("a",), False),
    "tail -n 5 a": (("a",), False),
    "tail -5 a": (("a",), False),
    "wc a": (("a",), False),
    "wc -l a b": (("a", "b"), False),
    "wc -c a": (("a",), False),
    "wc --lines a": (("a",), False),
    "grep foo a.py": (("a.py",), False),
    "grep -rn foo src": (("src",), True),
    "grep -r foo": ((".",), True),
    "grep -n 'a|b' a.py": (("a.py",), False),
    "grep -E '^def (foo|bar)\\b' a.py": (("a.py",), False),
    'grep "TODO: fix" a.py': (("a.py",), False),
    "grep -e foo -e bar a": (("a",), False),
    "grep -f patterns.txt a": (("patterns.txt", "a"), False),
    "grep --include='*.py' -rn TODO src": (("src",), True),
    "grep -c foo a": (("a",), False),
    "grep -A 3 -B2 foo a": (("a",), False),
    "grep -i -- -foo a": (("a",), False),
    "grep --color=never foo a": (("a",), False),
    "rg foo": ((".",), True),
    "rg foo src": (("src",), True),
    "rg -n -g '*.py' foo": ((".",), True),
    "rg -i --no-heading foo src tests": (("src", "tests"), True),
    "rg --files": ((".",), True),
    "rg -e foo -e bar src": (("src",), True),
    "echo hello": ((), False),
    "echo 'a > b; c'": ((), False),
    "echo -n done": ((), False),
    "pwd": ((), False),
}


@pytest.mark.parametrize("command", sorted(ALLOWED))
def test_read_only_commands_stay_auto_allowed(command: str) -> None:
    check = check_shell_command(command, WS)
    assert check.allowed, check.reason
    assert (check.paths, check.recursive) == ALLOWED[command]
    decision = needs_permission(
        "auto", "run_shell_command", command=command, workspace=WS, fenced=True
    )
    assert decision == "allow"


def test_words_are_what_the_shell_passes() -> None:
    check = check_shell_command("grep -n 'a b' \"c d\" e", WS)
    assert check.argv == ("grep", "-n", "a b", "c d", "e")
    assert check.paths == ("c d", "e")
    assert check_shell_command("echo hi", WS).builtin
    assert not check_shell_command("cat a", WS).builtin


def test_without_a_workspace_every_absolute_path_asks() -> None:
    assert not check_shell_command(f"cat {WS}/a").allowed
    assert check_shell_command("cat a").allowed


def test_no_program_that_runs_others_is_listed() -> None:
    assert set(PROGRAMS) == {"ls", "cat", "head", "tail", "wc", "grep", "rg", "echo", "pwd"}
