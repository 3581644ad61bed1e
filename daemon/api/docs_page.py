"""``/docs``: Swagger UI over ``/openapi.json``, from assets served by the API itself.

FastAPI's default page loads Swagger UI (and its favicon) from a CDN, so it was blank offline or
behind a strict egress policy (issue 29). The assets come from the ``swagger-ui-bundle`` package
(Apache-2.0) at ``/docs/assets``; FastAPI's ReDoc page (``/redoc``, CDN too) is not served.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

DOCS_PATH = "/docs"
ASSETS_PATH = f"{DOCS_PATH}/assets"


def mount(app: FastAPI) -> None:
    """Serve ``/docs`` and its assets; create the app with ``docs_url=None, redoc_url=None``."""
    app.mount(ASSETS_PATH, StaticFiles(directory=swagger_ui_path), name="swagger-ui")

    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} API",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js", swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon-32x32.png",
        )

    app.add_api_route(DOCS_PATH, docs, include_in_schema=False)
