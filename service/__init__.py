"""The fastsse ingestion service, installed as ``fastsse_service``.

The repository keeps it in ``service/``; the build maps that folder to the package
``fastsse_service`` (pyproject.toml), a name no other project's top-level package takes.  It is
always imported by that name, so that one process never holds two copies of its modules (two
settings caches, two metric registries).
"""

if __name__ != "fastsse_service":
    raise ImportError(
        f"the service is the package fastsse_service, imported here as {__name__!r}: "
        "pip install -e '.[service]' and import fastsse_service"
    )
