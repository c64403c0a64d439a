"""The feature tags `/capabilities` advertises: only those whose behaviour exists here.

Each surface that lands adds its tags to FEATURES, with the deployment toggle
(if any) that turns the behaviour on. `tests/test_capabilities.py` fails when a
tag is advertised without a behaviour test.
"""

from __future__ import annotations

from collections.abc import Callable

from runtime.settings import Settings


def _always(_settings: Settings) -> bool:
    return True


FEATURES: list[tuple[str, Callable[[Settings], bool]]] = [
    ("health", _always),
    ("capabilities", _always),
    ("daemon_status", _always),
    # Conditional tags: present only when the operator turned the behaviour on.
    ("require_auth", lambda s: s.require_auth),
    ("allow_origin", lambda s: bool(s.allow_origin)),
    ("rate_limit", lambda s: s.rate_limit),
]


def advertised_features(settings: Settings) -> list[str]:
    return [tag for tag, enabled in FEATURES if enabled(settings)]
