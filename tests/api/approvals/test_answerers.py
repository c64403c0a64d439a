"""Each feature answers its own kinds of the approvals' inbox (issue 23): it lists its
answerers in `api/<feature>/__init__.py` (`approval_answerers()`), the app collects them,
one per kind. No Temporal, no store: the app is only built."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from api import sessions
from api.app import FEATURES, approval_answerers, create_app
from runtime.approvals.ledger import ApprovalKind
from runtime.settings import Settings


def test_every_kind_has_exactly_one_answerer_in_a_built_app(tmp_path: Path) -> None:
    app = create_app(Settings(workspace=tmp_path, data_dir=tmp_path / ".data", port=4170))
    answerers = app.state.approval_answerers
    assert set(answerers) == set(ApprovalKind)
    # Exactly one: no kind listed by two features (the build refuses that, below).
    listed = [
        kind
        for feature in FEATURES
        if hasattr(feature, "approval_answerers")
        for kind in feature.approval_answerers()
    ]
    assert sorted(listed) == sorted(ApprovalKind)
    assert all(callable(answerer) for answerer in answerers.values())


def test_a_kind_answered_by_two_features_is_refused() -> None:
    twin = ModuleType("api.twin")
    twin.approval_answerers = sessions.approval_answerers  # type: ignore[attr-defined]
    refused = r"'permission' is answered by both api\.sessions and api\.twin"
    with pytest.raises(RuntimeError, match=refused):
        approval_answerers((*FEATURES, twin))


def test_a_kind_no_feature_answers_is_refused() -> None:
    without_sessions = tuple(feature for feature in FEATURES if feature is not sessions)
    with pytest.raises(
        RuntimeError, match=r"no feature answers the approval kinds \['permission'\]"
    ):
        approval_answerers(without_sessions)
