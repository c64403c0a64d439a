"""SSE subscribers in a process of their own: `python -m bench.subscriber BASE_URL`.

The throughput figure reads its streams from here so the subscribers' HTTP parsing does
not share the API's process and event loop (a real client never does). One JSON command a
line on stdin, one JSON answer a line on stdout; EOF ends the process.

- `{"stream": ID, "subscribers": K, "last": SEQ}`: open K streams on the session (live
  only), answer `{"ready": true}`, read every stream up to event SEQ, answer
  `{"done": true, "warnings": N}` (slow_client_warning frames seen);
- `{"replay": ID, "events": N}`: GET the stream with `Last-Event-ID: 0`, answer
  `{"ms": T}`, the time until its `replay_complete` frame (after N events).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import httpx

from bench.client import open_stream, receive_until, replay_run


def _answer(body: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


async def serve(base_url: str) -> None:
    limits = httpx.Limits(max_connections=128, max_keepalive_connections=128)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as http:
        while line := await asyncio.to_thread(sys.stdin.readline):
            command: dict[str, Any] = json.loads(line)
            if "replay" in command:
                ms = await replay_run(http, str(command["replay"]), int(command["events"]))
                _answer({"ms": ms})
                continue
            session_id = str(command["stream"])
            async with contextlib.AsyncExitStack() as stack:
                readers = [
                    await stack.enter_async_context(open_stream(http, session_id))
                    for _ in range(int(command["subscribers"]))
                ]
                _answer({"ready": True})
                warnings = await asyncio.gather(
                    *(receive_until(reader, int(command["last"])) for reader in readers)
                )
                _answer({"done": True, "warnings": sum(warnings)})


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
