"""Helpers for session-daemon tests: an in-process daemon (API + worker) and event waits."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from runtime.sessions.streams import envelope
from runtime.store import EventJournal
from runtime.streams import session_stream


@dataclass
class Daemon:
    client: httpx.AsyncClient
    workspace: Path
    journal: EventJournal

    async def create(self, **body: Any) -> dict[str, Any]:
        response = await self.client.post("/session", json=body)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    async def prompt(self, session_id: str, text: str, **headers: str) -> httpx.Response:
        return await self.client.post(
            f"/session/{session_id}/prompt",
            json={"prompt": [{"type": "text", "text": text}]},
            headers=headers,
        )

    def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        page = self.journal.read(session_stream(session_id), after, 100_000)
        return [envelope(entry) for entry in page.entries]

    async def wait_for(
        self,
        session_id: str,
        event_type: str,
        *,
        prompt_id: str | None = None,
        count: int = 1,
        timeout: float = 60.0,
    ) -> list[dict[str, Any]]:
        """All events of the session once `count` events of `event_type` are there."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.events(session_id)
            matching = [
                e
                for e in events
                if e["type"] == event_type and (prompt_id is None or e.get("promptId") == prompt_id)
            ]
            if len(matching) >= count:
                return events
            await asyncio.sleep(0.05)
        types = [e["type"] for e in self.events(session_id)]
        raise AssertionError(f"{event_type} x{count} never arrived; saw {types}")


def write_prompt(workspace: Path, name: str, content: str = "hi\n") -> str:
    """A prompt the scripted model turns into a write_file call (needs permission)."""
    import json

    args = json.dumps({"file_path": str(workspace / name), "content": content})
    return f"/call write_file {args}\n/say wrote {name}"
