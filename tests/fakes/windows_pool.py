"""A real Windows machine pool on loopback (protocol version 1, README "Windows machine
pool"), driven by the test that runs it.

`FakeWindowsPool` serves the pool's HTTP protocol in a background thread. Each session
holds a `Guest`: top-level windows with an element tree (snapshot refs `e<N>` valid until
the next snapshot), the processes its `launch` started, a build task, a foreground
window. Programs come from `PROGRAMS` (a test may add its own). The pool keeps the
operator's secrets (`secrets`), a saturation limit (`capacity`), sessions that expire
unless renewed, and lets the test evict a session (`evict`), break a host's desktop
(`desktop`, `capture_probe_failed`) or inject any answer (`inject`).

    with FakeWindowsPool(token="t", capacity=2) as pool:
        ...  # AGENTRT_WINDOWS_POOL_URL=pool.base_url, AGENTRT_WINDOWS_POOL_TOKEN="t"
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass
class Element:
    control_type: str
    name: str
    automation_id: str | None = None
    bounds: tuple[int, int, int, int] = (0, 0, 100, 30)  # x, y, width, height
    enabled: bool = True
    masked: bool = False
    value: str = ""
    children: list[Element] = field(default_factory=list)

    def walk(self) -> list[Element]:
        return [self, *(e for child in self.children for e in child.walk())]


@dataclass
class Window:
    hwnd: int
    pid: int
    title: str
    root: Element
    bounds: tuple[int, int, int, int] = (100, 100, 800, 600)
    # A higher-integrity window: input into it is refused (INPUT_BLOCKED).
    elevated: bool = False


@dataclass
class Program:
    """What launching a program does: the window it shows (None: none), after `delay_s`."""

    title: str | None
    elements: list[Element] = field(default_factory=list)
    delay_s: float = 0.0
    elevated: bool = False


def _notepad() -> Program:
    return Program(
        "Untitled - Notepad",
        [
            Element("MenuItem", "File", "file", (110, 130, 40, 20)),
            Element("Edit", "Text Editor", "text", (110, 160, 780, 500)),
        ],
    )


def _login() -> Program:
    return Program(
        "Sign in",
        [
            Element("Edit", "User name", "user", (120, 140, 200, 24)),
            Element("Edit", "Password", "password", (120, 180, 200, 24), masked=True),
            Element("Button", "OK", "ok", (120, 220, 80, 24)),
            Element("Button", "Disabled", "later", (220, 220, 80, 24), enabled=False),
        ],
    )


PROGRAMS: dict[str, Any] = {
    "notepad.exe": _notepad,
    "login.exe": _login,
    "silent.exe": lambda: Program(None),
    "slow.exe": lambda: Program("Slow window", [], delay_s=0.3),
    "admin.exe": lambda: Program(
        "Administrator", [Element("Edit", "Field", "field", (120, 140, 200, 24))], elevated=True
    ),
}

KNOWN_KEYS = frozenset(
    {"ctrl", "alt", "shift", "win", "enter", "tab", "esc", "escape", "space", "backspace"}
    | {"delete", "up", "down", "left", "right", "home", "end", "pageup", "pagedown"}
    | {f"f{n}" for n in range(1, 13)}
    | {chr(c) for c in range(ord("a"), ord("z") + 1)}
    | {str(n) for n in range(10)}
)


@dataclass
class Hit:
    window: Window
    element: Element
    method: str  # "pattern" (the element's own) or "mouse" (a point)


@dataclass
class Refusal:
    answer: tuple[int, dict[str, Any]]


@dataclass
class Task:
    handle: str
    state: str = "running"  # running | succeeded | failed | cancelled
    exit_code: int | None = None
    output: str = ""


class Guest:
    """One leased machine's desktop and build state, in memory."""

    def __init__(self, pool: FakeWindowsPool) -> None:
        self.pool = pool
        self.windows: dict[int, Window] = {}
        self.processes: dict[int, str] = {}
        self.foreground: int | None = None
        self.refs: dict[str, Element] = {}
        self.task: Task | None = None
        self.tasks: dict[str, Task] = {}
        self.keys: list[str] = []
        self.mouse: list[dict[str, Any]] = []
        self.pointer = (0, 0)

    # -- desktop ----------------------------------------------------------------------------

    def launch(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        factory = self.pool.programs.get(str(args.get("program", "")).lower())
        if factory is None:
            return 400, {"error": "program_not_found", "message": f"no {args.get('program')}"}
        program: Program = factory()
        with self.pool.lock:
            pid = next(self.pool.ids)
            hwnd = next(self.pool.ids)
            self.processes[pid] = str(args["program"])
            self.pool.launched.append(str(args["program"]))
        if program.title is None:
            return 200, {"pid": pid, "hwnd": None, "title": None}
        window = Window(
            hwnd,
            pid,
            program.title,
            Element("Window", program.title, None, (100, 100, 800, 600), children=program.elements),
            elevated=program.elevated,
        )

        def show() -> None:
            with self.pool.lock:
                if pid in self.processes:
                    self.windows[hwnd] = window
                    self.foreground = hwnd

        wait_s = int(args.get("waitForWindowMs", 0)) / 1000
        if program.delay_s <= 0:
            show()
        elif program.delay_s <= wait_s:
            time.sleep(program.delay_s)
            show()
        else:
            threading.Timer(program.delay_s, show).start()
            return 200, {"pid": pid, "hwnd": None, "title": None}
        return 200, {"pid": pid, "hwnd": hwnd, "title": window.title}

    def list_windows(self) -> dict[str, Any]:
        return {
            "windows": [
                {"hwnd": w.hwnd, "pid": w.pid, "title": w.title, "bounds": list(w.bounds)}
                for w in self.windows.values()
            ]
        }

    def _window(self, hwnd: Any) -> Window | None:
        return self.windows.get(hwnd) if isinstance(hwnd, int) else None

    def focus(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        window = self._window(args.get("hwnd"))
        if window is None:
            return 404, {"code": "WINDOW_NOT_FOUND", "hwnd": args.get("hwnd")}
        self.foreground = window.hwnd
        return 200, {"hwnd": window.hwnd, "foreground": True}

    def close(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        window = self._window(args.get("hwnd"))
        if window is None:
            return 404, {"code": "WINDOW_NOT_FOUND", "hwnd": args.get("hwnd")}
        del self.windows[window.hwnd]
        if self.foreground == window.hwnd:
            self.foreground = next(iter(self.windows), None)
        return 200, {"closed": True}

    def snapshot(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "hwnd" in args:
            window = self._window(args["hwnd"])
            if window is None:
                return 404, {"code": "WINDOW_NOT_FOUND", "hwnd": args["hwnd"]}
            windows = [window]
        else:
            windows = list(self.windows.values())
        self.refs = {}
        counter = itertools.count(1)
        lines: list[str] = []

        def render(element: Element, depth: int) -> None:
            ref = f"e{next(counter)}"
            self.refs[ref] = element
            extra = f' automationId="{element.automation_id}"' if element.automation_id else ""
            flags = "" if element.enabled else " disabled"
            flags += " masked" if element.masked else ""
            lines.append(
                f'{"  " * depth}{element.control_type} "{element.name}"{extra}{flags} ref={ref}'
            )
            for child in element.children:
                render(child, depth + 1)

        for window in windows:
            render(window.root, 0)
        return 200, {"snapshot": "\n".join(lines), "refs": len(self.refs)}

    def _find(self, args: dict[str, Any]) -> tuple[Window, Element] | None:
        for window in self.windows.values():
            for element in window.root.walk():
                if "ref" in args:
                    if self.refs.get(args["ref"]) is element:
                        return window, element
                elif "automationId" in args:
                    if element.automation_id == args["automationId"]:
                        return window, element
                elif "name" in args and element.name == args["name"]:
                    if args.get("controlType") in (None, element.control_type):
                        return window, element
        return None

    def _at(self, x: int, y: int) -> tuple[Window, Element] | None:
        hit: tuple[Window, Element] | None = None
        for window in self.windows.values():
            for element in window.root.walk():
                ex, ey, ew, eh = element.bounds
                if ex <= x < ex + ew and ey <= y < ey + eh:
                    hit = (window, element)  # the deepest, the last drawn
        return hit

    def _target(self, args: dict[str, Any]) -> Hit | Refusal:
        if "x" in args and "y" in args and not {"ref", "automationId", "name"} & args.keys():
            found = self._at(int(args["x"]), int(args["y"]))
            method = "mouse"
        else:
            found = self._find(args)
            method = "pattern"
        if found is None:
            return Refusal(
                (
                    404,
                    {
                        "code": "ELEMENT_NOT_FOUND",
                        "message": "guest: no element matches (the tree changed)",
                    },
                )
            )
        window, element = found
        if window.elevated:
            return Refusal((403, {"code": "INPUT_BLOCKED", "reason": "higher_integrity_window"}))
        return Hit(window, element, method)

    def click(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        target = self._target(args)
        if isinstance(target, Refusal):
            return target.answer
        window, element, method = target.window, target.element, target.method
        if method == "mouse" and self.foreground != window.hwnd:
            return 409, {"code": "WINDOW_NOT_FOREGROUND", "hwnd": window.hwnd}
        if not element.enabled:
            return 409, {"code": "INPUT_BLOCKED", "reason": "element_disabled"}
        if element.automation_id == "ok" and window.title == "Sign in":
            _user, password = (e.value for e in window.root.walk() if e.control_type == "Edit")
            window.title = (
                "Welcome" if password == self.pool.secrets.get("app-password") else "Sign in failed"
            )
            window.root.name = window.title
        return 200, {
            "clicked": element.name,
            "method": "invoke" if method == "pattern" else "mouse",
        }

    def type(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if {"ref", "automationId", "name", "x"} & args.keys():
            target = self._target(args)
            if isinstance(target, Refusal):
                return target.answer
            window, element, method = target.window, target.element, target.method
        else:
            focused = self._window(self.foreground)
            edits = [e for e in focused.root.walk() if e.control_type == "Edit"] if focused else []
            if focused is None or not edits:
                return 404, {"code": "ELEMENT_NOT_FOUND", "message": "nothing focused"}
            window, element, method = focused, edits[0], "keys"
        if self.foreground != window.hwnd:
            return 409, {"code": "WINDOW_NOT_FOREGROUND", "hwnd": window.hwnd}
        if "secretRef" in args:
            name = args["secretRef"]
            value = self.pool.secrets.get(name)
            if value is None:
                return 404, {
                    "code": "SECRET_NOT_FOUND",
                    "secretRef": name,
                    "host": self.pool.host,
                    "message": f"guest: secret {name} missing on {self.pool.host}",
                }
            if not element.masked:
                return 422, {
                    "code": "SECRET_TARGET_NOT_MASKED",
                    "reason": "target_not_password",
                    "state": "nothing_typed",
                    "secretRef": name,
                    "host": self.pool.host,
                    # The guest's free text: agentrt must never pass it on.
                    "message": f"guest: refusing to type into '{element.name}' = {element.value!r}",
                    "guestLog": "GUEST-FREE-TEXT",
                }
            element.value = value
            return 200, {"typed": True, "method": "value_pattern", "secretRef": name}
        element.value += str(args["text"])
        return 200, {"typed": True, "method": "value_pattern" if method == "pattern" else "keys"}

    def key(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        keys = str(args.get("keys", ""))
        parts = [p.strip().lower() for p in keys.split("+")]
        unknown = [p for p in parts if p not in KNOWN_KEYS]
        if unknown:
            return 400, {"error": "unknown_key", "keys": unknown}
        if not self.windows:
            return 409, {"code": "WINDOW_NOT_FOREGROUND", "reason": "no_window"}
        self.keys.append(keys)
        if parts == ["alt", "f4"] and self.foreground is not None:
            self.close({"hwnd": self.foreground})
        return 200, {"sent": keys}

    def _wait_state(self, args: dict[str, Any]) -> bool:
        if "title" in args:
            present = any(w.title == args["title"] for w in self.windows.values())
            enabled = present
        else:
            found = self._find(args)
            present = found is not None
            enabled = present and found is not None and found[1].enabled
        state = args.get("state", "exists")
        return {"exists": present, "enabled": enabled, "gone": not present}[state]

    def wait_for(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        started = time.monotonic()
        deadline = started + int(args.get("timeoutMs", 0)) / 1000
        while True:
            with self.pool.lock:
                reached = self._wait_state(args)
            elapsed = int((time.monotonic() - started) * 1000)
            if reached:
                return 200, {
                    "reached": True,
                    "state": args.get("state", "exists"),
                    "elapsedMs": elapsed,
                }
            if time.monotonic() >= deadline:
                return 408, {"code": "WAIT_TIMEOUT", "elapsedMs": elapsed}
            time.sleep(0.02)

    def computer(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        action = args["action"]
        if action in ("move", "click", "double_click", "right_click", "mouse_down", "mouse_up"):
            # Without a point, where the pointer is.
            x, y = int(args.get("x", self.pointer[0])), int(args.get("y", self.pointer[1]))
            self.pointer = (x, y)
            self.mouse.append({"action": action, "x": x, "y": y})
            hit = self._at(x, y)
            if hit is not None and action == "click":
                self.foreground = hit[0].hwnd
            return 200, {"action": action, "x": x, "y": y}
        if "text" not in args:
            return 400, {"error": "text_required"}
        if action == "key":
            return self.key({"keys": args["text"]})
        return self.type({"text": args["text"]})

    def screenshot(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        width, height = 1920, 1080
        if "hwnd" in args:
            window = self._window(args["hwnd"])
            if window is None:
                return 404, {"code": "WINDOW_NOT_FOUND", "hwnd": args["hwnd"]}
            width, height = window.bounds[2], window.bounds[3]
        png = tiny_png(width // 40, height // 40)
        return 200, {
            "mimeType": "image/png",
            "data": base64.b64encode(png).decode("ascii"),
            "width": width,
            "height": height,
        }

    # -- build ------------------------------------------------------------------------------

    def run_spec(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.task is not None and self.task.state == "running":
            return 409, {"error": "task_running", "taskHandle": self.task.handle}
        task = Task(handle=f"task-{next(self.pool.ids)}")
        self.task = task
        self.tasks[task.handle] = task
        threading.Thread(target=self._run, args=(task, str(args["script"])), daemon=True).start()
        return 202, {"taskHandle": task.handle}

    def _run(self, task: Task, script: str) -> None:
        """A script is lines of `echo <text>`, `sleep <seconds>`, `exit <code>`."""
        for line in script.splitlines():
            word, _, rest = line.strip().partition(" ")
            if task.state != "running":
                return
            if word == "echo":
                task.output += rest + "\n"
            elif word == "sleep":
                end = time.monotonic() + float(rest)
                while time.monotonic() < end and task.state == "running":
                    time.sleep(0.01)
            elif word == "exit":
                with self.pool.lock:
                    if task.state == "running":
                        task.exit_code = int(rest)
                        task.state = "succeeded" if task.exit_code == 0 else "failed"
                return
        with self.pool.lock:
            if task.state == "running":
                task.exit_code, task.state = 0, "succeeded"

    def task_status(self, handle: str) -> tuple[int, dict[str, Any]]:
        task = self.tasks.get(handle)
        if task is None:
            return 400, {"error": "unknown_task", "taskHandle": handle}
        answer: dict[str, Any] = {"state": task.state}
        if task.exit_code is not None:
            answer["exitCode"] = task.exit_code
        if task.output:
            answer["output"] = task.output
        return 200, answer

    def shut_down(self) -> list[str]:
        """The session ends: cancel the build, close every launched process."""
        if self.task is not None and self.task.state == "running":
            self.task.state = "cancelled"
        closed = list(self.processes.values())
        self.processes.clear()
        self.windows.clear()
        self.foreground = None
        return closed


@dataclass
class PoolSessionState:
    session_id: str
    tenant: str
    holder: str
    expires_at: datetime
    desktop: str
    guest: Guest


@dataclass
class Injection:
    """Answer the next `times` requests whose path matches `path_pattern` (and `method`)
    with `status` / `body`; `body` None with status 0 closes the connection unanswered."""

    path_pattern: str
    status: int
    body: Any
    method: str | None = None
    times: int = 1


@dataclass
class Withheld:
    """The answer to the next request matching `method` and `path_pattern`, computed (the
    pool has done what it asks) but withheld until `release` is set; `reached` is set when
    the request arrives."""

    method: str
    path_pattern: str
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def tiny_png(width: int, height: int) -> bytes:
    """A valid grey PNG of this size."""
    width, height = max(width, 1), max(height, 1)
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


_SESSION_PATH = re.compile(r"^/v1/sessions/(?P<sid>[^/]+)(?P<rest>/.*)?$")
_DESKTOP_HANDLERS = {
    "launch": Guest.launch,
    "focus": Guest.focus,
    "close": Guest.close,
    "snapshot": Guest.snapshot,
    "click": Guest.click,
    "type": Guest.type,
    "key": Guest.key,
    "wait_for": Guest.wait_for,
    "computer": Guest.computer,
    "screenshot": Guest.screenshot,
}
# Verbs that run outside the pool's lock (they wait on the guest's own time).
_UNLOCKED = frozenset({"launch", "wait_for"})


class _Server(ThreadingHTTPServer):
    # Hundreds of holders connect at once (bench/): the default backlog of 5 would make
    # the kernel drop their SYNs and the clients wait a retransmission out.
    request_queue_size = 1024
    daemon_threads = True


class FakeWindowsPool:
    def __init__(
        self,
        *,
        token: str = "pool-token",
        capacity: int = 1000,
        host: str = "win-host-1",
        desktop: str = "interactive",
        forbidden_tokens: frozenset[str] = frozenset(),
    ) -> None:
        self.token = token
        self.forbidden_tokens = forbidden_tokens
        self.capacity = capacity
        self.host = host
        self.desktop = desktop  # the desktop of sessions opened from now on
        self.capture_probe_failed = False
        self.secrets: dict[str, str] = {"app-password": "hunter2"}
        self.programs: dict[str, Any] = dict(PROGRAMS)
        self.sessions: dict[str, PoolSessionState] = {}
        self.closed: dict[str, list[str]] = {}  # session id -> processes closed at its end
        self.launched: list[str] = []
        self.requests: list[tuple[str, str, Any]] = []
        self.injections: list[Injection] = []
        self.withheld: list[Withheld] = []
        self.ids = itertools.count(1000)
        self.lock = threading.RLock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeWindowsPool:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the test's levers -------------------------------------------------------------------

    def inject(
        self,
        path_pattern: str,
        status: int,
        body: Any = None,
        *,
        method: str | None = None,
        times: int = 1,
    ) -> None:
        with self.lock:
            self.injections.append(Injection(path_pattern, status, body, method, times))

    def withhold(self, method: str, path_pattern: str) -> Withheld:
        """Withhold the answer to the next such request (see `Withheld`)."""
        withheld = Withheld(method, path_pattern)
        with self.lock:
            self.withheld.append(withheld)
        return withheld

    def evict(self, session_id: str) -> None:
        """The pool forgets the session (its guest shuts down): the next call is a 404."""
        with self.lock:
            state = self.sessions.pop(session_id)
            self.closed[session_id] = state.guest.shut_down()

    def guest(self, session_id: str) -> Guest:
        with self.lock:
            return self.sessions[session_id].guest

    def holders(self) -> list[str]:
        with self.lock:
            return [s.holder for s in self.sessions.values()]

    # -- the protocol ------------------------------------------------------------------------

    def _expire(self) -> None:
        now = datetime.now(UTC)
        for sid in [sid for sid, s in self.sessions.items() if s.expires_at <= now]:
            self.evict(sid)

    def _injected(self, method: str, path: str) -> Injection | None:
        for injection in self.injections:
            if injection.method not in (None, method) or not re.search(
                injection.path_pattern, path
            ):
                continue
            injection.times -= 1
            if injection.times <= 0:
                self.injections.remove(injection)
            return injection
        return None

    def handle(self, method: str, path: str, auth: str | None, body: Any) -> tuple[int, Any]:
        with self.lock:
            withheld = next(
                (
                    w
                    for w in self.withheld
                    if w.method == method and re.search(w.path_pattern, path)
                ),
                None,
            )
            if withheld is not None:
                self.withheld.remove(withheld)
        answer = self._answer(method, path, auth, body)
        if withheld is not None:
            withheld.reached.set()
            withheld.release.wait(60)
        return answer

    def _answer(self, method: str, path: str, auth: str | None, body: Any) -> tuple[int, Any]:
        with self.lock:
            self.requests.append((method, path, body))
            injection = self._injected(method, path)
        if injection is not None:
            return injection.status, injection.body
        presented = auth.removeprefix("Bearer ") if auth and auth.startswith("Bearer ") else None
        if presented in self.forbidden_tokens:
            return 403, {"error": "forbidden"}
        if presented != self.token:
            return 401, {"error": "unauthenticated"}
        with self.lock:
            self._expire()
            if method == "POST" and path == "/v1/sessions":
                return self._open(body)
            match = _SESSION_PATH.match(path)
            if match is None:
                return 404, {"error": "no_route"}
            state = self.sessions.get(match["sid"])
            if state is None:
                return 404, {"error": "session_not_found", "sessionId": match["sid"]}
            rest = match["rest"] or ""
            if method == "DELETE" and rest == "":
                self.evict(state.session_id)
                return 204, None
            if method == "POST" and rest == "/renew":
                lease_ms = int(body.get("leaseMs", 300_000))
                state.expires_at = datetime.now(UTC) + timedelta(milliseconds=lease_ms)
                return 200, {"expiresAt": state.expires_at.isoformat()}
            if method == "POST" and rest == "/run-spec":
                return state.guest.run_spec(body)
            if method == "GET" and rest.startswith("/tasks/"):
                return state.guest.task_status(rest.removeprefix("/tasks/"))
            if method != "POST" or not rest.startswith("/desktop/"):
                return 405, {"error": "method_not_allowed"}
            verb = rest.removeprefix("/desktop/")
            if state.desktop == "session_0":
                return 503, {"code": "DESKTOP_UNAVAILABLE", "reason": "session_0"}
            if self.capture_probe_failed:
                return 503, {"code": "DESKTOP_UNAVAILABLE", "reason": "capture_probe_failed"}
            if verb == "windows":
                return 200, state.guest.list_windows()
            handler = _DESKTOP_HANDLERS.get(verb)
            if handler is None:
                return 404, {"error": "unknown_verb", "verb": verb}
            if verb not in _UNLOCKED:
                return handler(state.guest, body)
        return handler(state.guest, body)

    def _open(self, body: dict[str, Any]) -> tuple[int, Any]:
        if len(self.sessions) >= self.capacity:
            return 503, {"error": "saturated", "holders": self.holders()}
        sid = f"ws-{next(self.ids)}"
        lease_ms = int(body.get("leaseMs", 300_000))
        state = PoolSessionState(
            session_id=sid,
            tenant=str(body.get("tenant")),
            holder=str(body.get("holder")),
            expires_at=datetime.now(UTC) + timedelta(milliseconds=lease_ms),
            desktop=self.desktop,
            guest=Guest(self),
        )
        self.sessions[sid] = state
        return 201, {
            "sessionId": sid,
            "host": self.host,
            "expiresAt": state.expires_at.isoformat(),
            "desktop": state.desktop,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        pool = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                status, answer = pool.handle(
                    self.command, self.path, self.headers.get("Authorization"), body
                )
                if status == 0:  # an injected silence: drop the connection unanswered
                    self.close_connection = True
                    self.connection.close()
                    return
                payload = b"" if answer is None else json.dumps(answer).encode("utf-8")
                self.send_response(status)
                if payload:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _serve
            do_POST = _serve
            do_DELETE = _serve

        return Handler
