"""The Windows verbs as tools of the one tool layer (runtime/tools), for every agent that
drives the lane: what the model is offered and how each verb is classified.

Every verb runs through the holder's lease workflow (runtime/windows/lease_client),
one attempt per call under the call's update id: a click is never repeated. The
annotations say what the verb does to the machine; the lease is what makes the dispatch.
"""

from __future__ import annotations

from typing import Final

from runtime.tools import ToolAnnotations, ToolDescriptor
from runtime.windows.verbs import ARGS_MODELS, WindowsVerb

_DESCRIPTIONS: Final[dict[WindowsVerb, str]] = {
    WindowsVerb.RUN_SPEC: "Submit a build script to the leased machine; returns a taskHandle.",
    WindowsVerb.TASK_STATUS: "The state of a build task (running, succeeded, failed, cancelled).",
    WindowsVerb.LAUNCH: "Start a program on the leased desktop; returns {pid, hwnd, title}.",
    WindowsVerb.WINDOWS: "The visible top-level windows with their hwnd and bounds.",
    WindowsVerb.FOCUS: "Bring a window (hwnd) to the foreground.",
    WindowsVerb.CLOSE: "Close a window (hwnd).",
    WindowsVerb.SNAPSHOT: "The UI Automation tree as indented text, one node per line with a "
    "ref=e<N> valid until the next snapshot.",
    WindowsVerb.CLICK: "Click an element (ref, else automationId / name + controlType) or a point.",
    WindowsVerb.TYPE: "Type text (or a secretRef, into a masked password control only).",
    WindowsVerb.KEY: "Press a key chord, e.g. Ctrl+S, Alt+F4.",
    WindowsVerb.WAIT_FOR: "Wait for an element or a window title to exist, be enabled or be gone.",
    WindowsVerb.COMPUTER: "Raw mouse / keyboard in pixels of the primary screen.",
    WindowsVerb.SCREENSHOT: "A screenshot of the primary screen, or cropped to a hwnd; returns a "
    "reference to the stored image.",
    WindowsVerb.RELEASE: "Give the leased machine back to the pool now (idempotent).",
}

_READS: Final = frozenset(
    {WindowsVerb.TASK_STATUS, WindowsVerb.WINDOWS, WindowsVerb.SNAPSHOT, WindowsVerb.SCREENSHOT}
)
_IDEMPOTENT: Final = frozenset({WindowsVerb.FOCUS, WindowsVerb.RELEASE, WindowsVerb.WAIT_FOR})


def _annotations(verb: WindowsVerb) -> ToolAnnotations:
    if verb in _READS:
        return ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True)
    destructive = verb in (WindowsVerb.CLOSE, WindowsVerb.RUN_SPEC, WindowsVerb.COMPUTER)
    return ToolAnnotations(destructiveHint=destructive, idempotentHint=verb in _IDEMPOTENT)


WINDOWS_TOOLS: Final[dict[WindowsVerb, ToolDescriptor]] = {
    verb: ToolDescriptor(
        name=verb.value,
        title=verb.value.removeprefix("windows_").replace("_", " ").capitalize(),
        description=_DESCRIPTIONS[verb],
        arguments=model,
        annotations=_annotations(verb),
    )
    for verb, model in ARGS_MODELS.items()
}
