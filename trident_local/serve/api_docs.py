"""Swagger UI (/docs) and ReDoc (/redoc) from local files, for sites without internet.

FastAPI's defaults load their scripts from a CDN and fonts from Google, so on an air-gapped
site they are blank and elsewhere every visit tells third parties. The ``fastapi-offline``
package ships the same scripts; this serves them from the package (``pip install
trident_local[docs]``). The pages are shells like the web page: the spec they read,
``/openapi.json``, needs a read key when keys are on.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from trident_local.errors import TridentError

ASSETS = "/api-docs-assets"


def _assets() -> Path:
    try:
        import fastapi_offline
    except ImportError:
        raise TridentError("api_docs needs the fastapi-offline package (its local copy of Swagger UI and "
                           "ReDoc): pip install 'trident_local[docs]', or leave api_docs off") from None
    return Path(fastapi_offline.__file__).parent / "static"


def mount_api_docs(app: FastAPI) -> None:
    """Add /docs and /redoc, their scripts served from this machine."""
    app.mount(ASSETS, StaticFiles(directory=_assets()), name="api-docs-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} - API",
                                   swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS}/favicon.png")

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=f"{app.title} - API",
                              redoc_js_url=f"{ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS}/favicon.png", with_google_fonts=False)
