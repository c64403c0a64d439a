"""The pool activities against a real pool server on loopback (tests/fakes/windows_pool.py):
every verb, every code the pool can cause, the secret projection, eviction, screenshots."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.windows.pool import WindowsPoolActivities, read_screenshot
from runtime.failures import decode_failure
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.windows.contracts import (
    CallVerbInput,
    CloseSessionInput,
    OpenSessionInput,
    PoolSession,
    RenewInput,
)
from runtime.windows.errors import WindowsError, WindowsErrorCode
from runtime.windows.verbs import WindowsVerb, validate_and_clamp
from tests.conftest import free_port
from tests.fakes.windows_pool import FakeWindowsPool

T = TypeVar("T")
TOKEN = "pool-secret-token"


@pytest.fixture
def pool() -> Iterator[FakeWindowsPool]:
    with FakeWindowsPool(token=TOKEN, capacity=3, forbidden_tokens=frozenset({"banned"})) as p:
        yield p


@dataclass
class Harness:
    acts: WindowsPoolActivities
    journal: EventJournal
    env: ActivityEnvironment

    async def run(self, fn: Any, arg: Any) -> Any:
        return await self.env.run(fn, arg)

    async def open(self, holder: str = "coder-1") -> PoolSession:
        data = OpenSessionInput(tenant="acme", holder=holder, lease_ms=300_000)
        session: PoolSession = await self.run(self.acts.open_session, data)
        return session

    async def verb(self, session: PoolSession, verb: WindowsVerb, **args: Any) -> dict[str, Any]:
        data = CallVerbInput(
            tenant="acme",
            holder="coder-1",
            session=session,
            verb=verb,
            args=validate_and_clamp(verb, args),
        )
        result = await self.run(self.acts.call_verb, data)
        out: dict[str, Any] = result.result
        return out


def harness_for(store: Store, url: str | None, token: str | None) -> Harness:
    settings = Settings(windows_pool_url=url, windows_pool_token=token)
    journal = EventJournal(store)
    return Harness(WindowsPoolActivities(settings, journal), journal, ActivityEnvironment())


@pytest.fixture
async def h(store: Store, pool: FakeWindowsPool) -> AsyncIterator[Harness]:
    harness = harness_for(store, pool.base_url, TOKEN)
    yield harness
    await harness.acts.client.aclose()


async def fails(awaitable: Awaitable[T]) -> WindowsError:
    with pytest.raises(ApplicationError) as info:
        await awaitable
    assert info.value.non_retryable
    err = decode_failure(info.value)
    assert isinstance(err, WindowsError), info.value
    return err


async def test_session_lifecycle(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    assert session.host == "win-host-1" and session.desktop == "interactive"
    assert pool.sessions[session.session_id].holder == "coder-1"
    renewed = await h.run(h.acts.renew, RenewInput(session_id=session.session_id, lease_ms=600_000))
    assert renewed.expires_at > session.expires_at
    closed = await h.run(h.acts.close_session, CloseSessionInput(session_id=session.session_id))
    assert closed.closed is True
    again = await h.run(h.acts.close_session, CloseSessionInput(session_id=session.session_id))
    assert again.closed is False  # the pool no longer knows it: nothing is held either way
    err = await fails(h.run(h.acts.renew, RenewInput(session_id=session.session_id, lease_ms=1)))
    assert err.code is WindowsErrorCode.NOT_FOUND and err.data.sessionEvicted is True
    # Every request carried agentrt's bearer token (the pool answered none with 401).
    assert all(path != "401" for _, path, _ in pool.requests)


async def test_saturation_names_the_holders(h: Harness, pool: FakeWindowsPool) -> None:
    for n in range(3):
        await h.open(f"holder-{n}")
    err = await fails(h.open("holder-late"))
    assert err.code is WindowsErrorCode.POOL_ERROR and err.data.retryable
    assert err.data.httpStatus == 503
    assert err.data.poolDetail == {
        "error": "saturated",
        "holders": ["holder-0", "holder-1", "holder-2"],
    }


@pytest.mark.parametrize(
    ("token", "code"),
    [("wrong", WindowsErrorCode.UNAUTHENTICATED), ("banned", WindowsErrorCode.FORBIDDEN)],
)
async def test_credentials_refused(
    store: Store, pool: FakeWindowsPool, token: str, code: WindowsErrorCode
) -> None:
    harness = harness_for(store, pool.base_url, token)
    err = await fails(harness.open())
    assert err.code is code and not err.data.retryable
    await harness.acts.client.aclose()


async def test_no_http_answer_is_pool_unavailable(store: Store, pool: FakeWindowsPool) -> None:
    nobody = harness_for(store, f"http://127.0.0.1:{free_port()}", TOKEN)
    err = await fails(nobody.open())
    assert err.code is WindowsErrorCode.POOL_UNAVAILABLE
    assert err.data.httpStatus is None and err.data.retryable
    unset = harness_for(store, None, TOKEN)
    err = await fails(unset.open())
    assert err.code is WindowsErrorCode.POOL_UNAVAILABLE
    # A pool that drops the connection without answering.
    silent = harness_for(store, pool.base_url, TOKEN)
    pool.inject(r"^/v1/sessions$", 0)
    err = await fails(silent.open())
    assert err.code is WindowsErrorCode.POOL_UNAVAILABLE
    for harness in (nobody, unset, silent):
        await harness.acts.client.aclose()


async def test_build_form(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    started = await h.verb(session, WindowsVerb.RUN_SPEC, script="echo building\nsleep 0.2\nexit 0")
    handle = started["taskHandle"]
    conflict = await fails(h.verb(session, WindowsVerb.RUN_SPEC, script="exit 0"))
    assert conflict.code is WindowsErrorCode.CONFLICT and conflict.http_status == 409
    assert conflict.data.poolDetail["taskHandle"] == handle
    status = await h.verb(session, WindowsVerb.TASK_STATUS, taskHandle=handle)
    while status["state"] == "running":
        await asyncio.sleep(0.05)
        status = await h.verb(session, WindowsVerb.TASK_STATUS, taskHandle=handle)
    assert status == {"state": "succeeded", "exitCode": 0, "output": "building\n"}
    failed = await h.verb(session, WindowsVerb.RUN_SPEC, script="exit 3")
    status = await h.verb(session, WindowsVerb.TASK_STATUS, taskHandle=failed["taskHandle"])
    while status["state"] == "running":
        await asyncio.sleep(0.05)
        status = await h.verb(session, WindowsVerb.TASK_STATUS, taskHandle=failed["taskHandle"])
    assert status["state"] == "failed" and status["exitCode"] == 3


async def test_release_cancels_the_build_and_closes_what_was_launched(
    h: Harness, pool: FakeWindowsPool
) -> None:
    session = await h.open()
    guest = pool.guest(session.session_id)
    await h.verb(session, WindowsVerb.LAUNCH, program="notepad.exe")
    await h.verb(session, WindowsVerb.RUN_SPEC, script="sleep 30")
    released = await h.verb(session, WindowsVerb.RELEASE)
    assert released == {"released": True, "outcome": "released"}
    assert guest.task is not None and guest.task.state == "cancelled"
    assert pool.closed[session.session_id] == ["notepad.exe"]
    assert session.session_id not in pool.sessions
    again = await h.verb(session, WindowsVerb.RELEASE)
    assert again == {"released": False, "outcome": "evicted"}


async def test_desktop_form(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    launched = await h.verb(session, WindowsVerb.LAUNCH, program="notepad.exe")
    assert launched["title"] == "Untitled - Notepad" and launched["hwnd"] and launched["pid"]
    hwnd = launched["hwnd"]
    listed = await h.verb(session, WindowsVerb.WINDOWS)
    assert [w["hwnd"] for w in listed["windows"]] == [hwnd]
    assert listed["windows"][0]["bounds"] == [100, 100, 800, 600]
    assert (await h.verb(session, WindowsVerb.FOCUS, hwnd=hwnd))["foreground"] is True
    snap = await h.verb(session, WindowsVerb.SNAPSHOT, hwnd=hwnd)
    assert 'Edit "Text Editor" automationId="text" ref=e3' in snap["snapshot"]
    clicked = await h.verb(session, WindowsVerb.CLICK, ref="e2")
    assert clicked == {"clicked": "File", "method": "invoke"}
    typed = await h.verb(session, WindowsVerb.TYPE, automationId="text", text="hello")
    assert typed["typed"] is True
    typed = await h.verb(session, WindowsVerb.TYPE, ref="e3", text=" world")  # the snapshot's
    assert typed["method"] == "value_pattern"
    guest = pool.guest(session.session_id)
    editor = next(e for e in guest.windows[hwnd].root.walk() if e.automation_id == "text")
    assert editor.value == "hello world"
    assert (await h.verb(session, WindowsVerb.KEY, keys="Ctrl+S")) == {"sent": "Ctrl+S"}
    by_name = await h.verb(session, WindowsVerb.CLICK, name="File", controlType="MenuItem")
    assert by_name["method"] == "invoke"
    by_point = await h.verb(session, WindowsVerb.CLICK, x=115, y=135)
    assert by_point == {"clicked": "File", "method": "mouse"}
    moved = await h.verb(session, WindowsVerb.COMPUTER, action="click", x=500, y=400)
    assert moved == {"action": "click", "x": 500, "y": 400}
    again = await h.verb(session, WindowsVerb.COMPUTER, action="double_click")
    assert again == {"action": "double_click", "x": 500, "y": 400}  # where the pointer is
    assert guest.mouse == [
        {"action": "click", "x": 500, "y": 400},
        {"action": "double_click", "x": 500, "y": 400},
    ]
    assert (await h.verb(session, WindowsVerb.COMPUTER, action="key", text="Ctrl+A"))["sent"]
    assert (await h.verb(session, WindowsVerb.CLOSE, hwnd=hwnd)) == {"closed": True}
    gone = await fails(h.verb(session, WindowsVerb.FOCUS, hwnd=hwnd))
    assert gone.code is WindowsErrorCode.WINDOW_NOT_FOUND and gone.data.sessionEvicted is None
    assert gone.data.httpStatus == 404 and gone.http_status == 404


async def test_refs_last_until_the_next_snapshot(h: Harness) -> None:
    session = await h.open()
    await h.verb(session, WindowsVerb.LAUNCH, program="notepad.exe")
    await h.verb(session, WindowsVerb.SNAPSHOT)
    await h.verb(session, WindowsVerb.LAUNCH, program="login.exe")
    await h.verb(session, WindowsVerb.SNAPSHOT)  # new refs: e7 is now a login control
    assert (await h.verb(session, WindowsVerb.CLICK, ref="e7"))["clicked"] == "OK"
    stale = await fails(h.verb(session, WindowsVerb.CLICK, ref="e42"))
    assert stale.code is WindowsErrorCode.ELEMENT_NOT_FOUND and not stale.data.retryable


async def test_launch_wait_is_the_guest_s_honest_null(h: Harness) -> None:
    session = await h.open()
    silent = await h.verb(session, WindowsVerb.LAUNCH, program="silent.exe", waitForWindowMs=50)
    assert silent["hwnd"] is None and silent["pid"]
    late = await h.verb(session, WindowsVerb.LAUNCH, program="slow.exe", waitForWindowMs=0)
    assert late["hwnd"] is None
    shown = await h.verb(
        session, WindowsVerb.WAIT_FOR, title="Slow window", state="exists", timeoutMs=5000
    )
    assert shown["reached"] is True
    waited = await h.verb(session, WindowsVerb.LAUNCH, program="slow.exe", waitForWindowMs=5000)
    assert waited["title"] == "Slow window"


async def test_wait_for_states_and_timeout(h: Harness) -> None:
    session = await h.open()
    launched = await h.verb(session, WindowsVerb.LAUNCH, program="login.exe")
    ok = await h.verb(
        session, WindowsVerb.WAIT_FOR, automationId="ok", state="enabled", timeoutMs=5000
    )
    assert ok["reached"] is True
    timeout = await fails(
        h.verb(session, WindowsVerb.WAIT_FOR, automationId="later", state="enabled", timeoutMs=100)
    )
    assert timeout.code is WindowsErrorCode.WAIT_TIMEOUT and timeout.data.retryable
    assert timeout.data.poolDetail["elapsedMs"] >= 100
    await h.verb(session, WindowsVerb.CLOSE, hwnd=launched["hwnd"])
    gone = await h.verb(
        session, WindowsVerb.WAIT_FOR, title="Sign in", state="gone", timeoutMs=5000
    )
    assert gone["reached"] is True


async def test_secret_typed_into_a_masked_control(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    await h.verb(session, WindowsVerb.LAUNCH, program="login.exe")
    await h.verb(session, WindowsVerb.TYPE, automationId="user", text="bob")
    typed = await h.verb(
        session, WindowsVerb.TYPE, automationId="password", secretRef="app-password"
    )
    assert typed["typed"] is True
    assert "hunter2" not in json.dumps(typed)  # the value never reaches the caller
    await h.verb(session, WindowsVerb.CLICK, automationId="ok")
    titles = [w["title"] for w in (await h.verb(session, WindowsVerb.WINDOWS))["windows"]]
    assert titles == ["Welcome"]


async def test_secret_refusals_are_projected(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    await h.verb(session, WindowsVerb.LAUNCH, program="login.exe")
    await h.verb(session, WindowsVerb.TYPE, automationId="user", text="bob")
    err = await fails(
        h.verb(session, WindowsVerb.TYPE, automationId="user", secretRef="app-password")
    )
    assert err.code is WindowsErrorCode.SECRET_TARGET_NOT_MASKED and err.http_status == 422
    assert err.data.poolDetail == {
        "error": "SECRET_TARGET_NOT_MASKED",
        "reason": "target_not_password",
        "state": "nothing_typed",
        "secretRef": "app-password",
        "host": "win-host-1",
    }
    wire = json.dumps(err.response_body())
    assert "GUEST-FREE-TEXT" not in wire and "bob" not in wire and "guest:" not in wire
    missing = await fails(
        h.verb(session, WindowsVerb.TYPE, automationId="password", secretRef="license-key")
    )
    assert missing.code is WindowsErrorCode.SECRET_NOT_FOUND
    assert missing.data.poolDetail["secretRef"] == "license-key"
    assert "guest:" not in json.dumps(missing.response_body())
    # The same refusal on a call without a secret keeps the pool's whole body.
    plain = await fails(h.verb(session, WindowsVerb.CLICK, ref="e99"))
    assert plain.data.poolDetail["message"].startswith("guest:")


async def test_foreground_and_blocked_input(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    first = await h.verb(session, WindowsVerb.LAUNCH, program="notepad.exe")
    await h.verb(session, WindowsVerb.LAUNCH, program="login.exe")  # now in the foreground
    err = await fails(h.verb(session, WindowsVerb.TYPE, automationId="text", text="x"))
    assert (
        err.code is WindowsErrorCode.WINDOW_NOT_FOREGROUND
        and err.data.poolDetail["hwnd"] == (first["hwnd"])
    )
    await h.verb(session, WindowsVerb.FOCUS, hwnd=first["hwnd"])
    assert (await h.verb(session, WindowsVerb.TYPE, automationId="text", text="x"))["typed"]
    await h.verb(session, WindowsVerb.LAUNCH, program="admin.exe")
    blocked = await fails(h.verb(session, WindowsVerb.TYPE, automationId="field", text="x"))
    assert blocked.code is WindowsErrorCode.INPUT_BLOCKED and not blocked.data.retryable
    unknown_key = await fails(h.verb(session, WindowsVerb.KEY, keys="Ctrl+Banana"))
    assert unknown_key.code is WindowsErrorCode.BAD_REQUEST and unknown_key.http_status == 400
    assert unknown_key.data.poolDetail == {"error": "unknown_key", "keys": ["banana"]}


async def test_desktop_unavailable(h: Harness, pool: FakeWindowsPool) -> None:
    pool.desktop = "session_0"
    compile_only = await h.open()
    assert compile_only.desktop == "session_0"
    err = await fails(h.verb(compile_only, WindowsVerb.SNAPSHOT))
    assert err.code is WindowsErrorCode.DESKTOP_UNAVAILABLE and not err.data.retryable
    assert err.data.poolDetail["reason"] == "session_0" and "session_0" in err.message
    # The build form still works on a session_0 host.
    assert (await h.verb(compile_only, WindowsVerb.RUN_SPEC, script="exit 0"))["taskHandle"]
    pool.desktop = "interactive"
    pool.capture_probe_failed = True
    session = await h.open()
    err = await fails(h.verb(session, WindowsVerb.SCREENSHOT))
    assert err.code is WindowsErrorCode.DESKTOP_UNAVAILABLE
    assert err.data.poolDetail["reason"] == "capture_probe_failed"


async def test_eviction_is_not_found(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    await h.verb(session, WindowsVerb.LAUNCH, program="notepad.exe")
    pool.evict(session.session_id)
    assert pool.closed[session.session_id] == ["notepad.exe"]
    err = await fails(h.verb(session, WindowsVerb.WINDOWS))
    assert err.code is WindowsErrorCode.NOT_FOUND and err.data.sessionEvicted is True
    assert err.data.retryable and err.http_status == 404


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (504, {"code": "UI_TIMEOUT", "elapsedMs": 10_000}, WindowsErrorCode.UI_TIMEOUT),
        (429, {"error": "slow_down"}, WindowsErrorCode.RATE_LIMITED),
        (500, {"error": "boom"}, WindowsErrorCode.POOL_ERROR),
        (502, "<html>bad gateway</html>", WindowsErrorCode.POOL_ERROR),
        (401, {"error": "expired"}, WindowsErrorCode.UNAUTHENTICATED),
        (403, {"error": "nope"}, WindowsErrorCode.FORBIDDEN),
        (409, {"error": "busy"}, WindowsErrorCode.CONFLICT),
        (418, {"error": "teapot"}, WindowsErrorCode.BAD_REQUEST),
    ],
)
async def test_injected_answers(
    h: Harness, pool: FakeWindowsPool, status: int, body: Any, code: WindowsErrorCode
) -> None:
    session = await h.open()
    pool.inject(r"/desktop/snapshot$", status, body)
    err = await fails(h.verb(session, WindowsVerb.SNAPSHOT))
    assert err.code is code
    assert err.data.httpStatus == status and err.data.poolDetail == body


async def test_screenshots_are_stored_and_referenced(h: Harness, pool: FakeWindowsPool) -> None:
    session = await h.open()
    launched = await h.verb(session, WindowsVerb.LAUNCH, program="notepad.exe")
    full = await h.verb(session, WindowsVerb.SCREENSHOT)
    assert full["width"] == 1920 and full["mimeType"] == "image/png"
    assert "data" not in full
    stored = await read_screenshot(h.journal, full["screenshotRef"])
    assert stored is not None
    mime, image = stored
    assert mime == "image/png" and image.startswith(b"\x89PNG") and len(image) == full["bytes"]
    window = await h.verb(session, WindowsVerb.SCREENSHOT, hwnd=launched["hwnd"])
    assert (window["width"], window["height"], window["hwnd"]) == (800, 600, launched["hwnd"])
    assert window["screenshotRef"] != full["screenshotRef"]
    assert window["screenshotRef"].startswith("windows-screenshots/acme/coder-1#")
    assert await read_screenshot(h.journal, "windows-screenshots/acme/coder-1#999") is None
    assert await read_screenshot(h.journal, "session/x#1") is None


async def test_transient_failures_of_idempotent_calls_are_retryable(
    h: Harness, pool: FakeWindowsPool
) -> None:
    session = await h.open()
    sid = session.session_id
    pool.inject(r"/renew$", 503, {"error": "busy"})
    with pytest.raises(ApplicationError) as info:
        await h.run(h.acts.renew, RenewInput(session_id=sid, lease_ms=1000))
    assert not info.value.non_retryable  # Temporal's retry policy for RENEW applies
    err = decode_failure(info.value)
    assert isinstance(err, WindowsError) and err.code is WindowsErrorCode.POOL_ERROR
    pool.inject(rf"^/v1/sessions/{sid}$", 0, method="DELETE")
    with pytest.raises(ApplicationError) as info:
        await h.run(h.acts.close_session, CloseSessionInput(session_id=sid))
    assert not info.value.non_retryable
    # A refusal stays final, and so does any failure of a verb or an open.
    pool.inject(r"/renew$", 401, {"error": "expired"})
    await fails(h.run(h.acts.renew, RenewInput(session_id=sid, lease_ms=1000)))
    pool.inject(r"/desktop/windows$", 503, {"error": "busy"})
    await fails(h.verb(session, WindowsVerb.WINDOWS))
    pool.inject(r"^/v1/sessions$", 503, {"error": "busy"})
    await fails(h.open())


async def test_answers_outside_the_protocol_are_pool_errors(
    h: Harness, pool: FakeWindowsPool
) -> None:
    pool.inject(r"^/v1/sessions$", 201, {"sessionId": "s1"})  # no host, no expiresAt
    err = await fails(h.open())
    assert err.code is WindowsErrorCode.POOL_ERROR and err.data.httpStatus == 201
    session = await h.open()
    pool.inject(r"/desktop/screenshot$", 200, {"mimeType": "image/png", "data": "not base64!"})
    err = await fails(h.verb(session, WindowsVerb.SCREENSHOT))
    assert err.code is WindowsErrorCode.POOL_ERROR
    assert err.data.poolDetail == {"mimeType": "image/png"}
