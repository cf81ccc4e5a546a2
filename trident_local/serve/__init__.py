"""`trident serve`: the document QA service (FastAPI) and its web page.

    from trident_local.serve import Settings, create_app
    app = create_app(Settings(indexes={"docs": "idx"}))
"""

from trident_local.serve.app import create_app
from trident_local.serve.settings import Settings

__all__ = ["Settings", "create_app"]
