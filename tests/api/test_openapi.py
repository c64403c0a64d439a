"""/openapi.json describes what the server sends (issue 8, typed routes): every operation
has a typed success response, so a client can be generated from the document.

A JSON success response names its schema (a model, not FastAPI's empty `{}` for an
untyped `dict`); a stream or a page declares its media type instead; a 204 has no body.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from runtime.settings import Settings
from runtime.windows.errors import WindowsError, WindowsErrorCode

NOT_JSON = {"text/event-stream", "text/html", "application/x-ndjson"}


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp: Path = tmp_path_factory.mktemp("openapi")
    settings = Settings(workspace=tmp, data_dir=tmp / ".data", port=4170)
    return create_app(settings).openapi()


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    ]


def _is_typed(schema: dict[str, Any], document: dict[str, Any]) -> bool:
    """A `$ref` to a named object, or a union or array of typed schemas."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return name in document["components"]["schemas"]
    members: list[dict[str, Any]] = schema.get("anyOf") or schema.get("oneOf") or []
    if members:
        return all(_is_typed(member, document) for member in members)
    if schema.get("type") == "array":
        return _is_typed(schema.get("items", {}), document)
    return schema.get("type") == "object" and bool(schema.get("properties"))


def test_every_operation_has_a_typed_success_response(document: dict[str, Any]) -> None:
    untyped = []
    for method, path, operation in _operations(document):
        successes = {s: r for s, r in operation["responses"].items() if s.startswith("2")}
        assert successes, f"{method} {path} declares no success response"
        for status, response in successes.items():
            content: dict[str, Any] = response.get("content", {})
            if status == "204":
                if content:
                    untyped.append(f"{method} {path} {status}: a 204 with a body")
                continue
            if not content:
                untyped.append(f"{method} {path} {status}: no content")
            for media_type, media in content.items():
                if media_type in NOT_JSON:
                    continue
                if media_type != "application/json" or not _is_typed(
                    media.get("schema", {}), document
                ):
                    untyped.append(f"{method} {path} {status}: {media_type} {media}")
    assert not untyped, "\n".join(untyped)


def test_the_event_stream_declares_its_media_type(document: dict[str, Any]) -> None:
    response = document["paths"]["/session/{session_id}/events"]["get"]["responses"]["200"]
    assert list(response["content"]) == ["text/event-stream"]


def test_session_names_are_absent_rather_than_null(document: dict[str, Any]) -> None:
    """`displayName` of a listed session is omitted until it is named: optional, not null."""
    summary = document["components"]["schemas"]["SessionSummary"]
    assert "displayName" not in summary["required"]
    assert summary["properties"]["displayName"] == {
        "type": "string",
        "title": "Displayname",
        "description": "Present once the session is named.",
    }


def test_bodies_parsed_by_the_routes_are_documented(document: dict[str, Any]) -> None:
    prompt = document["paths"]["/session/{session_id}/prompt"]["post"]
    schema = prompt["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["prompt"]
    assert set(prompt["responses"]) >= {"200", "202"}


def test_windows_verb_route_documents_each_code_under_its_status(
    document: dict[str, Any],
) -> None:
    """Every Windows error code is named under the status the route answers it with
    (runtime/windows/errors.py), and under no other: the document cannot drift."""
    operation = document["paths"]["/api/v1/tenants/{tenant}/windows/{holder}/{verb}"]["post"]
    responses: dict[str, Any] = operation["responses"]
    for code in WindowsErrorCode:
        status = str(WindowsError.agentrt(code).http_status)
        assert status in responses, f"{code} answers {status}, undocumented"
        assert re.search(rf"\b{code.value}\b", responses[status]["description"]), (code, status)
        elsewhere = [
            other
            for other, response in responses.items()
            if other != status and re.search(rf"\b{code.value}\b", response["description"])
        ]
        assert not elsewhere, f"{code} is documented under {elsewhere} too"
        schema = responses[status]["content"]["application/json"]["schema"]
        assert {"$ref": "#/components/schemas/WindowsVerbError"} in schema["anyOf"]


def test_a_route_keeps_its_own_422(document: dict[str, Any]) -> None:
    """FastAPI's default 422 is dropped; a 422 the route declares itself stays."""
    for _method, _path, operation in _operations(document):
        response = operation["responses"].get("422")
        if response is not None:
            schema = response["content"]["application/json"]["schema"]
            assert "HTTPValidationError" not in str(schema)
    windows = document["paths"]["/api/v1/tenants/{tenant}/windows/{holder}/{verb}"]["post"]
    assert "SECRET_TARGET_NOT_MASKED" in windows["responses"]["422"]["description"]
