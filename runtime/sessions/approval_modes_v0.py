"""The `auto` mode's shell rule before the allow-list: a deny-list, kept for replay only.

SessionWorkflow decided `run_shell_command` calls in `auto` with these patterns until
the allow-list (`runtime.sessions.shell_allowlist`) replaced them: easy to walk around
(`cat $HOME/.ssh/id_rsa`, `awk 'BEGIN{system("id")}'`, `find . -exec ...` all passed).
A session whose history holds such a decision must still replay it the same way, or it
is stuck on a non-determinism error after the upgrade
(`tests/workflows/histories/session-auto-shell-before-allow-list.json`). The workflow
uses it only for a call whose recorded preview predates the allow-list (its
`ToolPreview.shell_fenced` is None); every new decision is the allow-list's.
"""

from __future__ import annotations

import re
from typing import Final

from runtime.sessions.approval_modes import Decision, needs_permission, tool_kind

_RISKY_PATTERNS: Final[tuple[re.Pattern[str], ...]] = tuple(
    re.compile(p)
    for p in (
        r"(^|[\s=:'\"<>|;&(])/",
        r"(^|[\s=:'\"<>|;&(/])\.\.(/|\s|$)",
        r"(^|[\s=:'\"<>|;&(])~",
        r"\$\(|`|\$\{|<\(|>\(",
        r"(^|[\s;&|(])(sudo|su|doas|pkexec|chroot)\b",
        r"(^|[\s;&|(])(curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|ftp|telnet|socat)\b",
        r"(^|[\s;&|(])(rm|rmdir|shred|dd|mkfs[\w.]*|fdisk|truncate|chmod|chown|chgrp)\b",
        r"(^|[\s;&|(])(kill|pkill|killall|shutdown|reboot|halt|poweroff|systemctl|crontab)\b",
        r"(^|[\s;&|(])(eval|exec|source|xargs|nohup|setsid|disown)\b",
        r"(^|[\s;&|(])\.\s",
        r"(^|[\s;&|(])cd\b",
        r"(^|[\s;&|(])(env|export)\b",
        r"\bgit\s+(push|reset|clean|checkout\s+--|config)\b",
        r"\b(pip|pip3|npm|pnpm|yarn|gem|cargo|apt|apt-get|brew)\s+(install|add|publish|remove)\b",
        r"(^|[\s;&|(])(python[\d.]*|node|perl|ruby|bash|sh|zsh)\s+-[ce]\b",
        r"&\s*$",
    )
)


def _risky_v0(command: str) -> bool:
    text = command.strip()
    return not text or any(p.search(text) for p in _RISKY_PATTERNS)


def needs_permission_v0(
    mode: str,
    tool_name: str,
    always_allowed: frozenset[str] = frozenset(),
    *,
    command: str | None = None,
) -> Decision:
    """The decision the workflow recorded before the allow-list (replay only)."""
    if mode == "auto" and tool_kind(tool_name) == "execute" and tool_name not in always_allowed:
        return "ask" if command is None or _risky_v0(command) else "allow"
    return needs_permission(mode, tool_name, always_allowed, command=command)
