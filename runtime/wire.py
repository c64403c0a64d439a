"""The house's wire models: snake_case in Python, camelCase on the wire, built once.

A model a client reads (a response) is a `WireModel`; a body a client sends is a
`WireBody`. Field names are Python's (`decision_id`); the alias generator (`to_camel`)
gives the wire's (`decisionId`), and a dump is by alias unless asked otherwise. A feature
builds its wire view once, in runtime/<feature>/ from its rows, and every door serves
that same model: the routes return it, agentrt's MCP server and the event stream dump it
(`model_dump(mode="json")`). No camelCase dict is assembled by hand and validated again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """A response model: fields in snake_case, serialized in camelCase (by alias)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class WireBody(WireModel):
    """A request body: only the camelCase names are accepted, and an unknown field is
    refused (`extra="forbid"`), as every strict body of the spec."""

    model_config = ConfigDict(extra="forbid", validate_by_name=False)


def omittable(description: str) -> Any:
    """A response field absent from the body when it has no value, never `null` on the wire:
    annotate it `T | SkipJsonSchema[None]` and drop unset or None fields on its route
    (`response_model_exclude_none`); its schema then shows neither `null` nor a default.

    Args:
        description: the field's description in the OpenAPI document.

    Returns:
        The field's `Field(...)`, defaulting to None.
    """
    return Field(default=None, description=description, json_schema_extra=_no_default)


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)
