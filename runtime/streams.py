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
    """A daemon session's events."""
    return f"session/{session_id}"


def session_transcript_stream(session_id: str) -> str:
    """A daemon session's conversation with its model."""
    return f"session-transcript/{session_id}"


def agent_tools_events_stream(instance: str, workspace: str) -> str:
    """The agent-tools events of one instance's workspace."""
    return f"agent-tools/{instance}/{workspace}"


def turn_transcript_stream(instance: str, workspace: str, turn_id: str) -> str:
    """One agent-tools model turn's conversation."""
    return f"agent-transcript/{instance}/{workspace}/{turn_id}"


def agent_stream(tenant: str, instance_id: str) -> str:
    """A standing agent's turns, messages and decisions."""
    return f"agent/{tenant}/{instance_id}"


def agent_episode_stream(tenant: str, instance_id: str, event_id: str) -> str:
    """A standing agent's model conversation for the tick that handled `event_id`."""
    return f"agent-episode/{tenant}/{instance_id}/{event_id}"


def windows_screenshot_stream(tenant: str, holder: str) -> str:
    """A Windows lease holder's last screenshots."""
    return f"windows-screenshots/{tenant}/{holder}"


def coding_task_stream(tenant: str, task_id: str) -> str:
    """A coding task's audit: who drove its Windows lane (the verified identity)."""
    return f"coding-task/{tenant}/{task_id}"
