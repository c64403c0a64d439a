"""Images kept by reference in the journal (a Windows screenshot, an MCP tool's image or
binary resource): read one back by its reference `<stream>#<seq>`."""

from __future__ import annotations

import base64

from runtime.store import EventJournal


async def read_screenshot(journal: EventJournal, ref: str) -> tuple[str, bytes] | None:
    """A stored screenshot's (mimeType, image bytes), or None once it was pruned."""
    stream, _, seq_text = ref.rpartition("#")
    # Windows screenshots, and the images MCP tools answered (activities/mcp/calls.py).
    if not stream.startswith(("windows-screenshots/", "mcp-images/")) or not seq_text.isdigit():
        return None
    seq = int(seq_text)
    page = await journal.aread(stream, after=seq - 1, limit=1)
    if not page.entries or page.entries[0].seq != seq:
        return None
    data = page.entries[0].data
    return str(data["mimeType"]), base64.b64decode(data["data"])
