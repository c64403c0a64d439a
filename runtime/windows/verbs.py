"""The Windows pool lane's verbs (spec standing-agents §2.3, "Voie Windows"; issue 12):
each verb and its pool path (protocol version 1, README "Windows machine pool"), its
argument model, the validation and clamps applied before any lease, and the per-call time
budgets. The pool session and the activities are in `runtime.windows.contracts`; the
error vocabulary in `runtime.windows.errors`.

Pure: no I/O, so workflows import it through `imports_passed_through`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runtime.windows.errors import WindowsError, WindowsErrorCode

PROTOCOL_VERSION = 1

# Bounds of the spec, clamped, not refused: the guest's own ceilings.
MAX_WAIT_FOR_TIMEOUT_MS = 600_000
MAX_WAIT_FOR_WINDOW_MS = 55_000
# What agentrt sends when the caller gave no waitForWindowMs, so that every budget below
# is known to agentrt (the guest never waits longer than agentrt's HTTP timeout allows
# for). windows_wait_for's timeoutMs is required.
DEFAULT_WAIT_FOR_WINDOW_MS = 10_000
# guest < pool < core: the pool's budget for a call is its wait + POOL_BUDGET_MARGIN_MS,
# and agentrt's HTTP timeout is that budget + CORE_MARGIN_MS, so a guest that gave up
# (hwnd: null, WAIT_TIMEOUT) or a pool that gave up (UI_TIMEOUT) is always heard.
POOL_BUDGET_MARGIN_MS = 10_000
CORE_MARGIN_MS = 5_000
# The activity's start-to-close timeout is above the HTTP timeout (the activity ends by
# the HTTP timeout, as POOL_UNAVAILABLE, not by Temporal's).
ACTIVITY_MARGIN_MS = 10_000

# A secretRef names a secret provisioned on the pool: a bare name, no scheme, no path.
SECRET_REF_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class WindowsVerb(StrEnum):
    """The verbs of the lane: the session agent's tool names and the REST path segment."""

    RUN_SPEC = "windows_run_spec"
    TASK_STATUS = "windows_task_status"
    LAUNCH = "windows_launch"
    WINDOWS = "windows_windows"
    FOCUS = "windows_focus"
    CLOSE = "windows_close"
    SNAPSHOT = "windows_snapshot"
    CLICK = "windows_click"
    TYPE = "windows_type"
    KEY = "windows_key"
    WAIT_FOR = "windows_wait_for"
    COMPUTER = "windows_computer"
    SCREENSHOT = "windows_screenshot"
    RELEASE = "windows_release"


DESKTOP_VERBS: frozenset[WindowsVerb] = frozenset(
    {
        WindowsVerb.LAUNCH,
        WindowsVerb.WINDOWS,
        WindowsVerb.FOCUS,
        WindowsVerb.CLOSE,
        WindowsVerb.SNAPSHOT,
        WindowsVerb.CLICK,
        WindowsVerb.TYPE,
        WindowsVerb.KEY,
        WindowsVerb.WAIT_FOR,
        WindowsVerb.COMPUTER,
        WindowsVerb.SCREENSHOT,
    }
)
BUILD_VERBS: frozenset[WindowsVerb] = frozenset({WindowsVerb.RUN_SPEC, WindowsVerb.TASK_STATUS})


def desktop_name(verb: WindowsVerb) -> str:
    """The pool's name of a desktop verb: `windows_wait_for` -> `wait_for`."""
    if verb not in DESKTOP_VERBS:
        raise ValueError(f"{verb} is not a desktop verb")
    return verb.value.removeprefix("windows_")


HttpMethod = Literal["GET", "POST", "DELETE"]


def pool_request(
    verb: WindowsVerb, session_id: str, args: dict[str, Any]
) -> tuple[HttpMethod, str]:
    """The method and path (under AGENTRT_WINDOWS_POOL_URL) of a verb on a pool session.

    The body is `args` for a POST (windows_task_status has none: its handle is in the
    path; windows_release sends none)."""
    base = f"/v1/sessions/{session_id}"
    if verb is WindowsVerb.RUN_SPEC:
        return "POST", f"{base}/run-spec"
    if verb is WindowsVerb.TASK_STATUS:
        return "GET", f"{base}/tasks/{args['taskHandle']}"
    if verb is WindowsVerb.RELEASE:
        return "DELETE", base
    return "POST", f"{base}/desktop/{desktop_name(verb)}"


# --- Argument models (agentrt passes them to the pool under the same names) ---------------


class _Args(BaseModel):
    # An unknown argument is a mistake of the caller, refused before any lease.
    model_config = ConfigDict(extra="forbid")


class RunSpecArgs(_Args):
    script: str = Field(min_length=1)


class TaskStatusArgs(_Args):
    taskHandle: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")


class LaunchArgs(_Args):
    program: str = Field(min_length=1)
    args: list[str] | None = None
    waitForWindowMs: int | None = Field(default=None, ge=0)


class WindowsListArgs(_Args):
    pass


class HwndArgs(_Args):
    hwnd: int


class OptionalHwndArgs(_Args):
    hwnd: int | None = None


class _Target(_Args):
    """An element or a point, in exactly one form: `ref` (from the last snapshot), or
    `automationId`, or `name` + `controlType`, or the screen point `x` + `y`."""

    ref: str | None = Field(default=None, pattern=r"^e[0-9]+$")
    automationId: str | None = None
    name: str | None = None
    controlType: str | None = None
    x: int | None = None
    y: int | None = None

    # The verb named in a refusal.
    verb_name: ClassVar[str] = "windows_*"

    def target_forms(self) -> list[str]:
        """The forms given, each whole; a half form (name without controlType, x
        without y) is refused by `_one_target`."""
        forms = []
        if self.ref is not None:
            forms.append("ref")
        if self.automationId is not None:
            forms.append("automationId")
        if self.name is not None or self.controlType is not None:
            forms.append("name + controlType")
        if self.x is not None or self.y is not None:
            forms.append("x + y")
        return forms

    @model_validator(mode="after")
    def _one_target(self) -> _Target:
        if (self.x is None) != (self.y is None):
            raise ValueError("a point needs both x and y")
        if (self.name is None) != (self.controlType is None):
            raise ValueError("an element by name needs both name and controlType")
        forms = self.target_forms()
        if len(forms) != 1:
            given = f" (got {', '.join(forms)})" if forms else ""
            raise ValueError(
                f"{self.verb_name} takes exactly one target: ref, automationId, "
                f"name + controlType, or x + y{given}"
            )
        return self


class ClickArgs(_Target):
    verb_name: ClassVar[str] = "windows_click"
    button: Literal["left", "right", "middle"] | None = None
    double: bool | None = None


class TypeArgs(_Target):
    """Exactly one of `text` / `secretRef` (a secretRef is a bare name), into exactly one
    target, as windows_click takes it."""

    verb_name: ClassVar[str] = "windows_type"
    text: str | None = None
    secretRef: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> TypeArgs:
        if (self.text is None) == (self.secretRef is None):
            raise ValueError("windows_type takes exactly one of text / secretRef")
        if self.secretRef is not None and not SECRET_REF_PATTERN.fullmatch(self.secretRef):
            raise ValueError(
                f"secretRef must be a bare secret name (letters, digits, _ . -), "
                f"got {self.secretRef!r}"
            )
        return self


class KeyArgs(_Args):
    keys: str = Field(min_length=1)  # a chord, e.g. "Ctrl+S", "Alt+F4"


WaitState = Literal["exists", "enabled", "gone"]


class WaitForArgs(_Args):
    """Exactly one subject: an element (`ref`, or `automationId` / `name`, which name an
    element that may not exist yet) or a window `title`; `state` and `timeoutMs` are
    required (timeoutMs is clamped to MAX_WAIT_FOR_TIMEOUT_MS, not refused)."""

    ref: str | None = Field(default=None, pattern=r"^e[0-9]+$")
    automationId: str | None = None
    name: str | None = None
    title: str | None = None
    state: WaitState
    timeoutMs: int = Field(ge=0)

    @model_validator(mode="after")
    def _one_subject(self) -> WaitForArgs:
        given = [
            key
            for key, value in (
                ("ref", self.ref),
                ("automationId", self.automationId),
                ("name", self.name),
                ("title", self.title),
            )
            if value is not None
        ]
        if len(given) != 1:
            got = f" (got {', '.join(given)})" if given else ""
            raise ValueError(
                f"windows_wait_for takes exactly one of ref, automationId, name, title{got}"
            )
        return self


ComputerAction = Literal[
    "move", "click", "double_click", "right_click", "mouse_down", "mouse_up", "type", "key"
]


class ComputerArgs(_Args):
    """Raw input in pixels of the primary screen (windows_screenshot's coordinates). A
    pointer action without a point acts where the pointer is."""

    action: ComputerAction
    x: int | None = None
    y: int | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> ComputerArgs:
        if (self.x is None) != (self.y is None):
            raise ValueError("a point needs both x and y")
        if self.action in ("type", "key") and not self.text:
            raise ValueError(f"windows_computer {self.action} needs text")
        return self


class ReleaseArgs(_Args):
    pass


ARGS_MODELS: dict[WindowsVerb, type[_Args]] = {
    WindowsVerb.RUN_SPEC: RunSpecArgs,
    WindowsVerb.TASK_STATUS: TaskStatusArgs,
    WindowsVerb.LAUNCH: LaunchArgs,
    WindowsVerb.WINDOWS: WindowsListArgs,
    WindowsVerb.FOCUS: HwndArgs,
    WindowsVerb.CLOSE: HwndArgs,
    WindowsVerb.SNAPSHOT: OptionalHwndArgs,
    WindowsVerb.CLICK: ClickArgs,
    WindowsVerb.TYPE: TypeArgs,
    WindowsVerb.KEY: KeyArgs,
    WindowsVerb.WAIT_FOR: WaitForArgs,
    WindowsVerb.COMPUTER: ComputerArgs,
    WindowsVerb.SCREENSHOT: OptionalHwndArgs,
    WindowsVerb.RELEASE: ReleaseArgs,
}


def parse_verb(name: str) -> WindowsVerb:
    """The verb of a path segment or tool name.

    Raises:
        ApplicationError: VALIDATION_ERROR for an unknown verb.
    """
    try:
        return WindowsVerb(name)
    except ValueError:
        raise WindowsError.agentrt(
            WindowsErrorCode.VALIDATION_ERROR, f"unknown Windows verb {name!r}"
        ).application_error() from None


def _problem(loc: tuple[int | str, ...], msg: str) -> str:
    text = msg.removeprefix("Value error, ")
    return f"{'.'.join(str(p) for p in loc)}: {text}" if loc else text


def validate_and_clamp(verb: WindowsVerb, args: dict[str, Any]) -> dict[str, Any]:
    """The arguments agentrt sends to the pool: validated, bounds clamped, waits explicit.

    Pure, so the workflow's update validator runs it before any lease.

    Raises:
        ApplicationError: carrying a VALIDATION_ERROR `WindowsError` (non-retryable).
    """
    model = ARGS_MODELS[verb]
    try:
        parsed = model.model_validate(args)
    except ValidationError as err:
        problems = "; ".join(_problem(e["loc"], e["msg"]) for e in err.errors())
        raise WindowsError.agentrt(
            WindowsErrorCode.VALIDATION_ERROR, f"{verb.value}: {problems}"
        ).application_error() from None
    return clamp_waits(verb, parsed.model_dump(exclude_none=True))


def clamp_waits(verb: WindowsVerb, args: dict[str, Any]) -> dict[str, Any]:
    """The bounds of the spec on arguments already validated, clamped, not refused.

    The lease workflow's update handler applies only this: its validator checked the
    call when it was accepted, and a handler replaying a call accepted under older rules
    must issue the same commands as then."""
    clamped = dict(args)
    if verb is WindowsVerb.WAIT_FOR and isinstance(clamped.get("timeoutMs"), int):
        clamped["timeoutMs"] = min(clamped["timeoutMs"], MAX_WAIT_FOR_TIMEOUT_MS)
    elif verb is WindowsVerb.LAUNCH:
        wait = clamped.get("waitForWindowMs")
        wait = wait if isinstance(wait, int) else DEFAULT_WAIT_FOR_WINDOW_MS
        clamped["waitForWindowMs"] = min(wait, MAX_WAIT_FOR_WINDOW_MS)
    return clamped


def carries_secret(verb: WindowsVerb, args: dict[str, Any]) -> bool:
    """A call that carried a secret: its error's poolDetail is projected."""
    return verb is WindowsVerb.TYPE and args.get("secretRef") is not None


def wait_ms(verb: WindowsVerb, args: dict[str, Any]) -> int:
    """How long the guest may wait on this call (validated and clamped args)."""
    if verb is WindowsVerb.WAIT_FOR:
        # Required, and validated; a call accepted under older rules carried it too.
        return int(args["timeoutMs"])
    if verb is WindowsVerb.LAUNCH:
        return int(args.get("waitForWindowMs", DEFAULT_WAIT_FOR_WINDOW_MS))
    return 0


def pool_budget_ms(verb: WindowsVerb, args: dict[str, Any]) -> int:
    """The pool's budget for one call: the guest's wait + 10 s."""
    return wait_ms(verb, args) + POOL_BUDGET_MARGIN_MS


def http_timeout(verb: WindowsVerb, args: dict[str, Any]) -> timedelta:
    """agentrt's HTTP timeout for one call, above the pool's budget."""
    return timedelta(milliseconds=pool_budget_ms(verb, args) + CORE_MARGIN_MS)


def activity_timeout(verb: WindowsVerb, args: dict[str, Any]) -> timedelta:
    """The start-to-close timeout of the activity that runs one call, above its HTTP timeout."""
    return http_timeout(verb, args) + timedelta(milliseconds=ACTIVITY_MARGIN_MS)


# The timeout of the session calls (open, renew, close): no guest wait in them.
SESSION_CALL_TIMEOUT = timedelta(milliseconds=POOL_BUDGET_MARGIN_MS + CORE_MARGIN_MS)
SESSION_ACTIVITY_TIMEOUT = SESSION_CALL_TIMEOUT + timedelta(milliseconds=ACTIVITY_MARGIN_MS)


def renew_after(lease_ms: int) -> timedelta:
    """When the workflow renews a held session: two thirds into its lease, so a renewal
    that fails once (POOL_UNAVAILABLE) still has a third of the lease to be retried in."""
    return timedelta(milliseconds=lease_ms * 2 // 3)
