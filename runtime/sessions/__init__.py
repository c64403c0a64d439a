"""The session daemon protocol (spec session-daemon-http-protocol): sessions, prompts, events."""
