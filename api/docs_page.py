"""`serve --docs`: Swagger UI from this server itself, its files from the pinned swagger-ui-bundle
package, so the page loads nothing from a CDN and no favicon from elsewhere (INGEST_CONTRACT.md 11.1)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"
"""Swagger UI's script, stylesheet and favicon; public like /docs, which a browser loads without the token."""


def add_docs_page(app: FastAPI) -> None:
    from swagger_ui_bundle import swagger_ui_path

    app.mount(ASSETS_PATH, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get(DOCS_PATH, include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from validator.swagger.io
        )
