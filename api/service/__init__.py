"""The service's own routes: index, health, capabilities, docs and the pages."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter


def routers() -> list[APIRouter]:
    """This feature's routers, in the order the app includes them (imported here, when the
    app is built, so that importing one of the feature's modules loads no other)."""
    from api.service import capabilities, docs, health, index, ui

    return [index.router, docs.router, health.router, capabilities.router, ui.router]
