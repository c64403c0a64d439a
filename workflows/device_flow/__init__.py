"""DeviceFlowWorkflow and a model call's pause on it."""

from __future__ import annotations


def workflows() -> list[type]:
    """This feature's workflow classes, for the worker (imported when asked for, so that
    importing one of the feature's modules loads no other)."""
    from workflows.device_flow.flow import DeviceFlowWorkflow

    return [DeviceFlowWorkflow]
