"""The `auto` approval mode's shell rule: an allow-list of read-only commands.

Pure (no I/O), so SessionWorkflow, the tool preview and unit tests use the same code.
A shell command runs without asking in `auto` only when every rule below holds; any
other command asks (a permission request, as in `default`):

1. **One simple command, nothing the shell would interpret.** Outside single quotes only
   `A-Z a-z 0-9 _ . / , : = + @ % ^ -`, spaces and tabs; inside double quotes no `$`,
   backtick, backslash or `!`; no newline or other control character anywhere. So no
   `; | & < > $ ` ( ) { } * ? [ ] ! # ~ \\`: no list, pipeline, redirection,
   substitution, expansion, glob, subshell, background job or comment. The words are
   then split with `shlex` (POSIX), which is exactly what `/bin/sh` does with what is left.
2. **A program of the table** (`PROGRAMS`), by its bare name: not a path (`/bin/cat`,
   `./cat`), no `VAR=value` prefix, and none of the programs that run others (`env`,
   `xargs`, `find`, `sh`, interpreters, `awk`, `sed`, `git`...): they are not listed.
3. **Options the table lists for that program**, by their exact names (GNU's
   abbreviations of long options are refused: `--fi` could mean `--files0-from`), with
   values of the listed kind (a count, a text such as a pattern, or a path).
4. **Paths that stay in the workspace**, read lexically: every operand that names a file
   (and every path-valued option) is non-empty, has no `~`, `$` or `..` component, and
   is relative or an absolute path under the workspace.

Programs are listed with only the options that read: `tail -f` (never ends), `grep -R`
and `rg -L` (follow symlinks out of the tree), `rg --pre` and `-z` (run programs),
`wc --files0-from` are left out. `git` is deliberately not listed: the repository's own
configuration, which an `auto`-approved edit can write (`.git/config`), turns every
read command into an execution (`core.fsmonitor` runs on `git status`, `diff.external`
and textconv drivers on `git diff`/`show`, `gpg.program` on `git log` with
`log.showSignature`).

What the paths and the program resolve to (symlinks, the daemon's data dir inside the
workspace, a `PATH` reaching into the workspace) needs I/O: the tool preview checks it
(`activities.workspace.previews.shell_fenced`) and the workflow asks unless it passed.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

ValueKind = Literal["count", "text", "path"]

# Outside quotes: what the shell takes literally (no metacharacter, no expansion).
_PLAIN: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./,:=+@%^-"
)
_BLANK: Final = frozenset(" \t")
# Inside double quotes the shell still expands `$` and backticks and honours `\`; `!` is
# history expansion in interactive shells.
_DOUBLE_QUOTED_SPECIAL: Final = frozenset("$`\\!")
_COUNT: Final = re.compile(r"[+-]?[0-9]{1,18}[A-Za-z]{0,3}")
_DIGITS: Final = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True)
class Program:
    """What the allow-list accepts of one program.

    `flags` are short options without a value (combinable: `-la`); `valued` short options
    take a value, attached (`-n5`) or as the next word; `long_flags` and `long_valued`
    the same for `--name` / `--name=value` (or `--name value`). `operands` says what the
    words that are not options are: paths (opened), texts (never opened) or none allowed.
    """

    flags: str = ""
    valued: Mapping[str, ValueKind] = field(default_factory=dict)
    long_flags: frozenset[str] = frozenset()
    long_valued: Mapping[str, ValueKind] = field(default_factory=dict)
    operands: Literal["paths", "texts", "none"] = "paths"
    # grep/rg: the first operand is the pattern, unless an option gave one.
    pattern_first: bool = False
    pattern_options: frozenset[str] = frozenset()
    # head/tail: `-5` is `-n 5`.
    digit_option: bool = False
    # Options that make the program descend into directories; `always_recursive`: rg.
    recursive_options: frozenset[str] = frozenset()
    always_recursive: bool = False
    # A shell builtin of `/bin/sh` (no PATH lookup).
    builtin: bool = False


_GREP_CONTEXT: Final[dict[str, ValueKind]] = {"A": "count", "B": "count", "C": "count"}

PROGRAMS: Final[Mapping[str, Program]] = {
    "ls": Program(
        flags="1aAbBcCdFghiklmnNopqQrRsStuUvxX",
        long_flags=frozenset(
            {
                "--all",
                "--almost-all",
                "--classify",
                "--directory",
                "--human-readable",
                "--inode",
                "--numeric-uid-gid",
                "--recursive",
                "--reverse",
                "--size",
            }
        ),
        recursive_options=frozenset({"-R", "--recursive"}),
    ),
    "cat": Program(
        flags="AbEnsTuv",
        long_flags=frozenset(
            {
                "--number",
                "--number-nonblank",
                "--show-all",
                "--show-ends",
                "--show-nonprinting",
                "--show-tabs",
                "--squeeze-blank",
            }
        ),
    ),
    "head": Program(
        flags="qvz",
        valued={"n": "count", "c": "count"},
        long_flags=frozenset({"--quiet", "--silent", "--verbose", "--zero-terminated"}),
        long_valued={"--lines": "count", "--bytes": "count"},
        digit_option=True,
    ),
    "tail": Program(
        flags="qvz",
        valued={"n": "count", "c": "count"},
        long_flags=frozenset({"--quiet", "--silent", "--verbose", "--zero-terminated"}),
        long_valued={"--lines": "count", "--bytes": "count"},
        digit_option=True,
    ),
    "wc": Program(
        flags="clmwL",
        long_flags=frozenset({"--bytes", "--chars", "--lines", "--words", "--max-line-length"}),
    ),
    "grep": Program(
        flags="EFGPiyvwxclLoqsbHhnTZzaIr",
        valued={"e": "text", "f": "path", "m": "count", **_GREP_CONTEXT},
        long_flags=frozenset(
            {
                "--extended-regexp",
                "--fixed-strings",
                "--basic-regexp",
                "--perl-regexp",
                "--ignore-case",
                "--no-ignore-case",
                "--invert-match",
                "--word-regexp",
                "--line-regexp",
                "--count",
                "--files-with-matches",
                "--files-without-match",
                "--only-matching",
                "--quiet",
                "--silent",
                "--no-messages",
                "--byte-offset",
                "--with-filename",
                "--no-filename",
                "--line-number",
                "--initial-tab",
                "--null",
                "--null-data",
                "--text",
                "--recursive",
            }
        ),
        long_valued={
            "--regexp": "text",
            "--file": "path",
            "--max-count": "count",
            "--after-context": "count",
            "--before-context": "count",
            "--context": "count",
            "--include": "text",
            "--exclude": "text",
            "--exclude-dir": "text",
            "--color": "text",
            "--colour": "text",
            "--label": "text",
            "--binary-files": "text",
        },
        pattern_first=True,
        pattern_options=frozenset({"-e", "-f", "--regexp", "--file"}),
        recursive_options=frozenset({"-r", "--recursive"}),
    ),
    "rg": Program(
        flags="iSsFwxvclnNoHIa",
        valued={
            "e": "text",
            "f": "path",
            "g": "text",
            "t": "text",
            "T": "text",
            "m": "count",
            "M": "count",
            **_GREP_CONTEXT,
        },
        long_flags=frozenset(
            {
                "--ignore-case",
                "--smart-case",
                "--case-sensitive",
                "--fixed-strings",
                "--word-regexp",
                "--line-regexp",
                "--invert-match",
                "--count",
                "--files-with-matches",
                "--files-without-match",
                "--line-number",
                "--no-line-number",
                "--only-matching",
                "--with-filename",
                "--no-filename",
                "--no-heading",
                "--heading",
                "--text",
                "--files",
                "--json",
            }
        ),
        long_valued={
            "--regexp": "text",
            "--file": "path",
            "--glob": "text",
            "--type": "text",
            "--type-not": "text",
            "--max-count": "count",
            "--max-columns": "count",
            "--max-depth": "count",
            "--after-context": "count",
            "--before-context": "count",
            "--context": "count",
            "--color": "text",
        },
        pattern_first=True,
        pattern_options=frozenset({"-e", "-f", "--regexp", "--file", "--files"}),
        always_recursive=True,
    ),
    "echo": Program(flags="n", operands="texts", builtin=True),
    "pwd": Program(flags="LP", operands="none", builtin=True),
}


@dataclass(frozen=True)
class ShellCheck:
    """The allow-list's reading of a command: `allowed` (may run unasked in `auto`, once
    the fence agrees) or the `reason` it asks; the words (`argv`), the paths it opens
    (`paths`; `.` when a recursive program is given none) and whether it descends into
    directories."""

    allowed: bool
    reason: str = ""
    argv: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    recursive: bool = False
    builtin: bool = False


def _asks(reason: str) -> ShellCheck:
    return ShellCheck(allowed=False, reason=reason)


def _syntax_refusal(command: str) -> str | None:
    """Why the shell would interpret something in `command`, or None (see rule 1)."""
    quote: str | None = None
    for char in command:
        if char != "\t" and (ord(char) < 0x20 or ord(char) == 0x7F):
            return "a control character or a newline"
        if quote == "'":
            if char == "'":
                quote = None
            elif not char.isprintable():
                return "an unprintable character"
        elif quote == '"':
            if char == '"':
                quote = None
            elif char in _DOUBLE_QUOTED_SPECIAL:
                return f"`{char}` inside double quotes"
            elif not char.isprintable():
                return "an unprintable character"
        elif char in "'\"":
            quote = char
        elif char not in _PLAIN and char not in _BLANK:
            return f"the shell character `{char}`"
    if quote is not None:
        return "an unterminated quote"
    return None


def _path_refusal(word: str, workspace: str | None) -> str | None:
    """Why the path `word` may leave the workspace, read lexically (rule 4), or None."""
    if not word:
        return "an empty path"
    if "~" in word or "$" in word:
        return f"`~` or `$` in the path {word!r}"
    if ".." in word.split("/"):
        return f"a `..` component in the path {word!r}"
    if word.startswith("/"):
        if workspace is None:
            return f"the absolute path {word!r}"
        base = posixpath.normpath(workspace)
        path = posixpath.normpath(word)
        if path != base and not path.startswith(base.rstrip("/") + "/"):
            return f"the path {word!r} is outside the workspace"
    return None


def _value_refusal(option: str, kind: ValueKind, value: str, workspace: str | None) -> str | None:
    if kind == "count":
        return None if _COUNT.fullmatch(value) else f"{option} needs a count, not {value!r}"
    if kind == "path":
        return _path_refusal(value, workspace)
    return None


def check_shell_command(command: str, workspace: str | None = None) -> ShellCheck:
    """Read `command` against the allow-list (module docstring). `workspace` is the
    workspace's absolute path (an absolute path under it is accepted); without it, every
    absolute path asks."""
    if not command.strip():
        return _asks("an empty command")
    syntax = _syntax_refusal(command)
    if syntax is not None:
        return _asks(syntax)
    try:
        argv = shlex.split(command, posix=True)
    except ValueError as err:
        return _asks(f"unparsable: {err}")
    if not argv:
        return _asks("an empty command")
    program = PROGRAMS.get(argv[0])
    if program is None:
        return _asks(f"{argv[0]!r} is not a read-only program of the allow-list")
    reading = _Reading(argv[0], program, argv[1:], workspace)
    refusal = reading.run()
    if refusal is not None:
        return _asks(refusal)
    return ShellCheck(
        allowed=True,
        argv=tuple(argv),
        paths=tuple(reading.paths),
        recursive=reading.recursive,
        builtin=program.builtin,
    )


@dataclass
class _Reading:
    """One pass over a listed program's words, GNU style: options anywhere before `--`,
    short ones combinable, a value attached or in the next word."""

    name: str
    program: Program
    words: list[str]
    workspace: str | None
    index: int = 0
    operands: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    pattern_given: bool = False
    recursive: bool = False

    def run(self) -> str | None:
        """Why the words ask, or None (then `paths` and `recursive` are read)."""
        program = self.program
        self.recursive = program.always_recursive
        while self.index < len(self.words):
            word = self._next()
            if word == "--":
                self.operands.extend(self.words[self.index :])
                break
            if not word.startswith("-") or word == "-":
                self.operands.append(word)
                continue
            refusal = self._long(word) if word.startswith("--") else self._short(word)
            if refusal is not None:
                return refusal
        operands = self.operands
        if program.pattern_first and not self.pattern_given:
            if not operands:
                return f"{self.name} without a pattern"
            operands = operands[1:]  # the pattern: matched, never opened
        if program.operands == "none" and operands:
            return f"{self.name} takes no operand"
        if program.operands == "paths":
            for operand in operands:
                refusal = _path_refusal(operand, self.workspace)
                if refusal is not None:
                    return refusal
            self.paths.extend(operands)
            if self.recursive and not operands:
                self.paths.append(".")  # what a recursive program searches when given none
        return None

    def _next(self) -> str:
        word = self.words[self.index]
        self.index += 1
        return word

    def _long(self, word: str) -> str | None:
        option, has_value, value = word.partition("=")
        program = self.program
        if option in program.long_flags and not has_value:
            pass
        elif option in program.long_valued:
            refusal = self._value(option, program.long_valued[option], value if has_value else None)
            if refusal is not None:
                return refusal
        else:
            return f"the option {option} of {self.name} is not on the allow-list"
        self._note(option)
        return None

    def _short(self, word: str) -> str | None:
        program = self.program
        if program.digit_option and _DIGITS.fullmatch(word[1:]):
            return None  # head -5
        cluster = word[1:]
        for position, letter in enumerate(cluster):
            option = f"-{letter}"
            if letter in program.flags:
                self._note(option)
                continue
            kind = program.valued.get(letter)
            if kind is None:
                return f"the option {option} of {self.name} is not on the allow-list"
            self._note(option)
            return self._value(option, kind, cluster[position + 1 :] or None)
        return None

    def _value(self, option: str, kind: ValueKind, attached: str | None) -> str | None:
        """Check the option's value (attached, else the next word); a path is recorded."""
        if attached is None:
            if self.index >= len(self.words):
                return f"{option} needs a value"
            attached = self._next()
        refusal = _value_refusal(option, kind, attached, self.workspace)
        if refusal is None and kind == "path":
            self.paths.append(attached)
        return refusal

    def _note(self, option: str) -> None:
        self.pattern_given = self.pattern_given or option in self.program.pattern_options
        self.recursive = self.recursive or option in self.program.recursive_options
