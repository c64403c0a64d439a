"""WindowsLeaseWorkflow and its settlement."""

from __future__ import annotations


def workflows() -> list[type]:
    """This feature's workflow classes, for the worker (imported when asked for, so that
    importing one of the feature's modules loads no other)."""
    from workflows.windows.lease import WindowsLeaseWorkflow

    return [WindowsLeaseWorkflow]
