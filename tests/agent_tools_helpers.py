"""Helpers for agent-tools tests: a browser-like session and waiting on the event feed."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

ORIGIN = "http://127.0.0.1:4170"


class Browser:
    """An httpx client that behaves like the page: session cookie, Origin, CSRF header."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.csrf = ""

    async def open(self) -> Browser:
        response = await self.client.get("/api/v1/agent-tools/session")
        assert response.status_code == 200, response.text
        self.csrf = response.json()["csrfToken"]
        return self

    @property
    def mutation_headers(self) -> dict[str, str]:
        return {"Origin": ORIGIN, "X-CSRF-Token": self.csrf}

    async def post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return await self.client.post(path, json=body or {}, headers=self.mutation_headers)

    async def get(self, path: str) -> httpx.Response:
        return await self.client.get(path)

    async def start_turn(self, prompt: str, **extra: Any) -> dict[str, Any]:
        response = await self.post("/api/v1/agent-tools/turns", {"prompt": prompt, **extra})
        assert response.status_code == 202, response.text
        body: dict[str, Any] = response.json()
        return body

    async def events(self, cursor: int = 0, workspace: str = "demo") -> list[dict[str, Any]]:
        response = await self.get(
            f"/api/v1/agent-tools/events?cursor={cursor}&workspace={workspace}&limit=500"
        )
        assert response.status_code == 200, response.text
        events: list[dict[str, Any]] = response.json()["events"]
        return events

    async def wait_for_event(
        self, turn_id: str, event_type: str, timeout: float = 60.0, workspace: str = "demo"
    ) -> list[dict[str, Any]]:
        """All events of the turn once one of `event_type` is there."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = [e for e in await self.events(0, workspace) if e["turn_id"] == turn_id]
            if any(e["type"] == event_type for e in events):
                return events
            await asyncio.sleep(0.1)
        raise AssertionError(f"{event_type} never arrived for turn {turn_id}")

    async def wait_for_status(self, turn_id: str, status: str, timeout: float = 90.0) -> None:
        """Read the turn (GET, a query) until it reports `status`, as the page does."""
        deadline = time.monotonic() + timeout
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            state = (await self.get(f"/api/v1/agent-tools/turns/{turn_id}")).json()
            if state.get("status") == status:
                return
            await asyncio.sleep(0.2)
        raise AssertionError(f"turn {turn_id} never reached {status}: {state}")

    async def decide(self, research_id: str, decision: str) -> httpx.Response:
        return await self.post(
            f"/api/v1/research/{research_id}/decision",
            {"decision": decision, "decided_by": "reviewer@example", "note": "checked"},
        )

    async def resume(self, turn_id: str) -> httpx.Response:
        return await self.post(f"/api/v1/agent-tools/turns/{turn_id}/resume", {})


DEMO_PROMPT = "Who controls Kestrel Holdings and where did the Bluewater dredging money go?"
