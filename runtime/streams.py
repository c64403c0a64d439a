"""The names of the journal's streams, in one place (every layer builds them from here).

| stream | what it holds |
|---|---|
| `session/<session_id>` | a daemon session's events (SSE `/session/:id/events`) |
| `session-transcript/<session_id>` | the session's conversation with its model |
| `agent-tools/<instance>/<workspace>` | agent-tools events (`GET /api/v1/agent-tools/events`) |
| `agent-transcript/<instance>/<workspace>/<turn_id>` | an agent-tools model turn's conversation |
| `agent/<tenant>/<instance_id>` | a standing agent's turns, messages, decisions (SSE) |
| `agent-episode/<tenant>/<instance_id>/<event_id>` | one tick's model conversation |
| `windows-screenshots/<tenant>/<holder>` | a Windows lease holder's last screenshots |
"""

from __future__ import annotations


def session_stream(session_id: str) -> str:
    return f"session/{session_id}"


def session_transcript_stream(session_id: str) -> str:
    return f"session-transcript/{session_id}"


def agent_tools_events_stream(instance: str, workspace: str) -> str:
    return f"agent-tools/{instance}/{workspace}"


def turn_transcript_stream(instance: str, workspace: str, turn_id: str) -> str:
    return f"agent-transcript/{instance}/{workspace}/{turn_id}"


def agent_stream(tenant: str, instance_id: str) -> str:
    return f"agent/{tenant}/{instance_id}"


def agent_episode_stream(tenant: str, instance_id: str, event_id: str) -> str:
    return f"agent-episode/{tenant}/{instance_id}/{event_id}"


def windows_screenshot_stream(tenant: str, holder: str) -> str:
    return f"windows-screenshots/{tenant}/{holder}"


def coding_task_stream(tenant: str, task_id: str) -> str:
    """A coding task's audit: who drove its Windows lane (the verified identity)."""
    return f"coding-task/{tenant}/{task_id}"
