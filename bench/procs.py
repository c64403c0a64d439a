"""Processes from /proc (Linux): children, command lines, resident memory, CPU time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def _children_from_tasks(pid: int) -> list[int] | None:
    """Children listed by /proc/<pid>/task/*/children; None when the kernel has no such file."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    found: list[int] = []
    any_file = False
    for task in tasks:
        try:
            text = (task / "children").read_text()
        except FileNotFoundError:
            continue
        except OSError:
            any_file = True
            continue
        any_file = True
        found += [int(part) for part in text.split()]
    return found if any_file else None


def _children_from_scan(pid: int) -> list[int]:
    """Children by their PPid, for kernels without CONFIG_PROC_CHILDREN."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("PPid:"):
                    if int(line.split()[1]) == pid:
                        found.append(int(entry.name))
                    break
        except OSError:
            continue  # gone meanwhile
    return found


def children(pid: int) -> list[int]:
    listed = _children_from_tasks(pid)
    return listed if listed is not None else _children_from_scan(pid)


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    pending = children(pid)
    while pending:
        child = pending.pop()
        found.append(child)
        pending += children(child)
    return found


@dataclass(frozen=True)
class Memory:
    """Resident memory of a process (bytes): VmRSS, its anonymous and file-backed parts,
    and PSS (shared pages divided among the processes mapping them; 0 when unreadable)."""

    rss: int = 0
    anon: int = 0
    file: int = 0
    pss: int = 0

    def __add__(self, other: Memory) -> Memory:
        return Memory(
            self.rss + other.rss,
            self.anon + other.anon,
            self.file + other.file,
            self.pss + other.pss,
        )


def _kb_fields(path: Path, names: tuple[str, ...]) -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(":")
            if name in names:
                found[name] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


def memory(pid: int) -> Memory:
    """A process's memory now; all zero once it is gone."""
    status = _kb_fields(Path(f"/proc/{pid}/status"), ("VmRSS", "RssAnon", "RssFile"))
    rollup = _kb_fields(Path(f"/proc/{pid}/smaps_rollup"), ("Pss",))
    return Memory(
        rss=status.get("VmRSS", 0),
        anon=status.get("RssAnon", 0),
        file=status.get("RssFile", 0),
        pss=rollup.get("Pss", 0),
    )


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def role(argv: list[str]) -> str | None:
    """Which part of `agentrt up` a child is, from its command line."""
    if "cli" in argv and argv[-1] in ("api", "worker"):
        return argv[-1]
    if argv and Path(argv[0]).name.startswith("temporal") and "start-dev" in argv:
        return "temporal"
    return None


_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far; 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    # Fields after the command (which may hold spaces) in parentheses; utime, stime are 14, 15.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


@dataclass(frozen=True)
class CpuMeter:
    """CPU time used by named processes between `start()` and `per_op(n)`."""

    pids: Mapping[str, int]
    at_start: Mapping[str, float]

    @classmethod
    def start(cls, pids: Mapping[str, int]) -> CpuMeter:
        return cls(pids, {name: cpu_seconds(pid) for name, pid in pids.items()})

    def per_op_ms(self, operations: int) -> dict[str, float]:
        return {
            name: (cpu_seconds(pid) - self.at_start[name]) * 1000 / operations
            for name, pid in self.pids.items()
        }


def format_cpu(per_op: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {ms:.1f}" for name, ms in per_op.items())
