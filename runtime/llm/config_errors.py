"""Refusals of the model-routing configuration, each with its HTTP answer (status, code)."""

from __future__ import annotations

import re
from typing import Any

from runtime.llm.routing import SITE_PARENTS

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")


class LlmConfigError(ValueError):
    """A configuration refused, or a name that does not exist; `status` is its HTTP answer."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def unknown_site(site_id: str) -> LlmConfigError:
    return LlmConfigError(
        404,
        "unknown_site",
        f'Unknown call site "{site_id}"',
        siteId=site_id,
        allowed=list(SITE_PARENTS),
    )


def unknown_preset(preset_id: str, status: int = 404) -> LlmConfigError:
    return LlmConfigError(status, "unknown_preset", f'No preset "{preset_id}"', presetId=preset_id)


def unknown_provider(provider_id: str, status: int = 404) -> LlmConfigError:
    return LlmConfigError(
        status, "unknown_provider", f'No provider "{provider_id}"', providerId=provider_id
    )


def reserved(what: str, name: str) -> LlmConfigError:
    return LlmConfigError(
        400,
        "reserved_id",
        f'"{name}" is the built-in {what} (the deployment\'s settings) and cannot be replaced',
    )


def check_id(what: str, value: str) -> None:
    if not ID_PATTERN.match(value):
        raise LlmConfigError(
            400,
            "invalid_id",
            f"{what} must match {ID_PATTERN.pattern}",
        )
