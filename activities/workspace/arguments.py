"""Reading a tool call's arguments (the ACP `rawInput`), with the errors the model reads."""

from __future__ import annotations

from typing import Any

from runtime.tools.results import ToolError


def required_str(args: dict[str, Any], *keys: str, allow_empty: bool = False) -> str:
    for key in keys:
        value = args.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ToolError(f"Invalid arguments: {key} must be a string.")
        if value or allow_empty:
            return value
    raise ToolError(f"Invalid arguments: {' or '.join(keys)} is required.")


def optional_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"Invalid arguments: {key} must be a string.")
    return value


def optional_int(args: dict[str, Any], key: str, *, minimum: int) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolError(f"Invalid arguments: {key} must be an integer >= {minimum}.")
    return value


def optional_bool(args: dict[str, Any], key: str) -> bool:
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise ToolError(f"Invalid arguments: {key} must be a boolean.")
    return value


def path_argument(name: str, args: dict[str, Any]) -> str | None:
    keys: tuple[str, ...] = {
        "read_file": ("absolute_path", "file_path", "path"),
        "list_directory": ("path",),
        "glob": ("path",),
        "grep_search": ("path",),
        "write_file": ("file_path",),
        "edit": ("file_path",),
    }.get(name, ())
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    if name in ("list_directory", "glob", "grep_search"):
        return "."
    return None


def str_argument(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""
