"""Facts about the machine a benchmark ran on, for its notes (figures mean little without)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return None


def machine_facts() -> str:
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    memory = _memory_gib()
    return (
        f"Machine: {cores} cores ({usable} usable by this process), {_cpu_model()}, "
        + (f"{memory:.1f} GiB RAM, " if memory is not None else "")
        + f"{platform.system()} {platform.release()}, Python {platform.python_version()}; "
        + _load()
    )


def _load() -> str:
    """Load averages when the report is made: other work on the machine skews figures."""
    if not hasattr(os, "getloadavg"):
        return "load average unknown."
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min) at the end."
