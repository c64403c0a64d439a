"""`ToolDescriptor`: one declaration of a tool, and how its calls are dispatched.

The classification is MCP's own `ToolAnnotations` (readOnlyHint, destructiveHint,
idempotentHint, openWorldHint, with MCP's defaults when a server leaves one out), and it
alone decides the dispatch (`Dispatch`):

| annotations                                   | dispatch        | under replay or retry     |
|-----------------------------------------------|-----------------|---------------------------|
| `readOnlyHint`                                | `local`         | may run again: no effect  |
| `idempotentHint`, or agentrt makes it so      | `exactly_once`  | the operation id's record |
| anything else                                 | `at_most_once`  | `outcome_unknown`, no rerun|

"agentrt makes it so": a tool whose effect agentrt records with an operation id and
applies by compare-and-swap on the target's content hash (the file tools) is exactly
once whatever MCP's hint would say (`effect_ledger=True`).

Arguments are validated in one place (`ToolDescriptor.validate`), with one wording for
what is wrong: `Invalid arguments: <field> <problem>.`, the problems joined by `; `.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any, Final

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from runtime.llm.contracts import ToolSpec


class Dispatch(StrEnum):
    LOCAL = "local"
    EXACTLY_ONCE = "exactly_once"
    AT_MOST_ONCE = "at_most_once"


class ToolAnnotations(BaseModel):
    """MCP's tool annotations, each resolved to MCP's default when not given."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    readOnlyHint: bool = False
    destructiveHint: bool = True
    idempotentHint: bool = False
    openWorldHint: bool = True

    @classmethod
    def of(cls, given: Any) -> ToolAnnotations:
        """From an MCP server's annotations (a model, a dict or None): the hints it left
        out take MCP's defaults."""
        if given is None:
            return cls()
        raw = given.model_dump(by_alias=True) if isinstance(given, BaseModel) else dict(given)
        return cls.model_validate({k: v for k, v in raw.items() if isinstance(v, bool)})


READ_ONLY: Final = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True)


class ToolArgumentsError(Exception):
    """A call's arguments do not satisfy the tool's schema; `str()` is what the model reads."""


@dataclass(frozen=True)
class ToolDescriptor:
    """A tool as every layer sees it: the model (`spec`), the dispatch, the validation."""

    name: str
    description: str
    annotations: ToolAnnotations
    title: str | None = None
    arguments: type[BaseModel] | None = None
    # Given (an MCP server's inputSchema) or generated from `arguments`.
    input_schema: dict[str, Any] = field(default_factory=dict)
    # agentrt records the effect under an operation id and applies it by compare-and-swap
    # on content hashes: exactly once even where MCP's hints say nothing.
    effect_ledger: bool = False

    def __post_init__(self) -> None:
        if not self.input_schema and self.arguments is not None:
            object.__setattr__(self, "input_schema", arguments_schema(self.arguments))

    @property
    def dispatch(self) -> Dispatch:
        if self.annotations.readOnlyHint:
            return Dispatch.LOCAL
        if self.annotations.idempotentHint or self.effect_ledger:
            return Dispatch.EXACTLY_ONCE
        return Dispatch.AT_MOST_ONCE

    @property
    def read_only(self) -> bool:
        return self.dispatch is Dispatch.LOCAL

    def spec(self) -> ToolSpec:
        """What the model is offered."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.input_schema)

    def validate(self, args: dict[str, Any]) -> BaseModel | None:
        """The parsed arguments (None for a tool declared by its JSON schema alone: an
        MCP server's, a standing agent's), checked against the schema the model saw.

        Raises:
            ToolArgumentsError: with the one wording, naming each field and its problem.
        """
        if self.arguments is None:
            problems = schema_problems(self.input_schema, args)
            if problems:
                raise ToolArgumentsError(f"Invalid arguments: {'; '.join(problems)}.")
            return None
        try:
            return self.arguments.model_validate(args)
        except ValidationError as err:
            raise ToolArgumentsError(arguments_problem(err)) from None


def arguments_problem(err: ValidationError) -> str:
    """`Invalid arguments: <field> <problem>.` for each error, joined by `; `."""
    problems = []
    for error in err.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where} {_problem(error)}")
    return f"Invalid arguments: {'; '.join(problems)}."


def schema_problems(schema: dict[str, Any], args: dict[str, Any]) -> list[str]:
    """What `args` breaks of a JSON schema, in the one wording (at most 5 problems)."""
    if not schema:
        return []
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
        errors = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.path])
    except Exception:  # a schema jsonschema cannot apply (a server's): its server judges
        return []
    problems = []
    for error in errors[:5]:
        path = [str(part) for part in error.absolute_path]
        keyword = error.validator
        if keyword == "required":
            missing = error.message.split("'")[1] if "'" in error.message else "a field"
            problems.append(f"{'.'.join([*path, missing])} is required")
            continue
        where = ".".join(path) or "arguments"
        if keyword == "additionalProperties":
            problems.append(f"{where}: {error.message}")
        elif keyword == "type":
            problems.append(f"{where} must be {_a(error.validator_value)}")
        elif keyword == "minimum":
            problems.append(f"{where} must be >= {error.validator_value}")
        elif keyword == "maximum":
            problems.append(f"{where} must be <= {error.validator_value}")
        elif keyword == "minLength" and error.validator_value == 1:
            problems.append(f"{where} must not be empty")
        elif keyword == "enum":
            allowed = ", ".join(map(str, error.validator_value))
            problems.append(f"{where} must be one of {allowed}")
        else:
            problems.append(f"{where}: {error.message}"[:300])
    return problems


def _a(kind: Any) -> str:
    names = {
        "string": "a string",
        "integer": "an integer",
        "boolean": "a boolean",
        "number": "a number",
        "object": "an object",
        "array": "an array",
    }
    kinds = kind if isinstance(kind, list) else [kind]
    return " or ".join(names.get(str(k), str(k)) for k in kinds)


@lru_cache(maxsize=512)
def _validator(schema: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema))


def _problem(error: Any) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not an argument of this tool"
    if kind in ("string_type", "string_sub_type"):
        return "must be a string"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "must be an integer"
    if kind in ("bool_type", "bool_parsing"):
        return "must be a boolean"
    if kind == "greater_than_equal":
        return f"must be >= {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"must be <= {ctx.get('le')}"
    if kind == "string_too_short":
        return "must not be empty" if ctx.get("min_length") == 1 else str(error["msg"]).lower()
    return str(error["msg"]).removeprefix("Value error, ")


class _ToolSchema(GenerateJsonSchema):
    """Pydantic's schema as a model API wants it: no titles, `X | None = None` as plain
    optional `X` (not required, no `null`, no default)."""

    def generate(self, schema: Any, mode: Any = "validation") -> JsonSchemaValue:
        cleaned: JsonSchemaValue = _clean(super().generate(schema, mode=mode))
        return cleaned


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _clean(v) for k, v in node.items() if k != "title"}
    variants = out.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and {"type": "null"} in variants:
        (kept,) = [v for v in variants if v != {"type": "null"}]
        out.pop("anyOf")
        out = {**kept, **out}
        if out.get("default", 0) is None:
            out.pop("default")
    props = out.get("properties")
    if isinstance(props, dict):
        for value in props.values():
            if isinstance(value, dict) and value.get("default", 0) is None:
                value.pop("default")
    return out


def arguments_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an argument model, as offered to a model: an object, always
    with `properties`, closed when the model forbids extra arguments."""
    schema: dict[str, Any] = model.model_json_schema(schema_generator=_ToolSchema)
    schema.setdefault("properties", {})
    # A model's docstring is for agentrt's developers; the tool's description is the model's.
    schema.pop("description", None)
    return schema
