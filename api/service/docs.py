"""GET /docs: Swagger UI for `/openapi.json`, served from this server.

FastAPI's default page loads Swagger UI from a CDN, so on a machine without the
internet `/docs` is blank. The assets come from the `swagger-ui-bundle-v2` package
instead (Swagger UI 5, which renders the OpenAPI 3.1 document FastAPI writes).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

router = APIRouter(include_in_schema=False)

ASSETS_PREFIX = "/docs/assets"
_ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css"}
_ASSETS_DIR = Path(str(swagger_ui_path))


@cache
def _asset(name: str) -> bytes:
    return (_ASSETS_DIR / name).read_bytes()


@router.get("/docs")
async def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="agentrt API",
        swagger_js_url=f"{ASSETS_PREFIX}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PREFIX}/swagger-ui.css",
        swagger_favicon_url="/ui/agent-tools.svg",
    )


@router.get(ASSETS_PREFIX + "/{name}")
async def docs_asset(name: str) -> Response:
    media_type = _ASSETS.get(name)
    if media_type is None:
        return Response(status_code=404)
    return Response(
        _asset(name),
        media_type=media_type,
        headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"},
    )
