"""The wire models' base (runtime/wire.py): snake_case in Python, camelCase on the wire."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runtime.wire import WireBody, WireModel


class View(WireModel):
    decision_id: str
    resolved_at: str | None = None


class Body(WireBody):
    message_id: str


def test_a_view_dumps_in_camel_case_by_default_and_keeps_its_order() -> None:
    view = View(decision_id="d-1")
    assert view.model_dump(mode="json") == {"decisionId": "d-1", "resolvedAt": None}
    assert list(view.model_dump(mode="json")) == ["decisionId", "resolvedAt"]
    assert view.model_dump_json() == '{"decisionId":"d-1","resolvedAt":null}'


def test_a_views_schema_names_the_wire_fields() -> None:
    schema = View.model_json_schema()
    assert list(schema["properties"]) == ["decisionId", "resolvedAt"]
    assert schema["required"] == ["decisionId"]


def test_a_body_takes_camel_case_only_and_refuses_unknown_fields() -> None:
    assert Body.model_validate({"messageId": "m"}).message_id == "m"
    with pytest.raises(ValidationError):
        Body.model_validate({"message_id": "m"})
    with pytest.raises(ValidationError):
        Body.model_validate({"messageId": "m", "extra": 1})
