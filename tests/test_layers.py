"""The layers of the repository, as its imports show them (read from the source, not run).

- fastsse/ is sans-IO: it imports the standard library only, and nothing of the service.
- fastsse/guard/ wraps an HTTP client's transport without importing one (httpx or httpx2 is
  the application's); besides the standard library and fastsse it may import only what is
  optional (OpenTelemetry), each under ``except ImportError``.  The core never imports it.
- The service's core (everything in service/ but the HTTP layer, the app, the command line and
  the server's protocol) imports neither the API layer nor a web framework: ingest returns
  outcomes, the routes turn them into answers.
- Reads (queries.py and the read routes) never import the writer or its stores.
- The service uses fastsse's public API only (no ``fastsse._...``).
- Nothing in the product imports loadtests/, bench/ or tests/.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SERVICE = REPO / "service"
WEB = ("fastapi", "starlette", "uvicorn")
# The HTTP layer and what assembles or runs it, and the tap (a reverse proxy: a server of its
# own, which posts to the service over HTTP): the rest of service/ is the core.
HTTP_LAYER = {"api", "app.py", "cli.py", "__main__.py", "http_limits.py", "tap"}
READS = ["queries.py", "api/routes/verdicts.py", "api/routes/rates.py", "api/routes/series.py"]
READS += ["api/routes/retries.py", "api/routes/categories.py"]


def imported(path: Path, package: str) -> set[str]:
    """The absolute names of every module the file imports (relative imports resolved
    against ``package``, the file's own package)."""
    return imported_by([ast.parse(path.read_text(), str(path))], package)


def imported_by(nodes: list[ast.AST], package: str) -> set[str]:
    names: set[str] = set()
    for node in (found for top in nodes for found in ast.walk(top)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def service_modules(*, http_layer: bool) -> list[Path]:
    found = []
    for path in sorted(SERVICE.rglob("*.py")):
        first = path.relative_to(SERVICE).parts[0]
        if (first in HTTP_LAYER) == http_layer:
            found.append(path)
    return found


def package_of(path: Path) -> str:
    parts = path.relative_to(SERVICE).parent.parts
    return ".".join(("fastsse_service", *parts))


@pytest.mark.parametrize("path", sorted((REPO / "fastsse").glob("*.py")), ids=lambda p: p.name)
def test_the_library_imports_the_standard_library_only(path):
    for name in imported(path, "fastsse"):
        top = name.split(".")[0]
        assert top == "fastsse" or top in sys.stdlib_module_names, f"{path.name} imports {name}"
        assert top not in ("socket", "asyncio", "subprocess", "logging"), f"{path.name} does I/O through {name}"


@pytest.mark.parametrize("path", sorted((REPO / "fastsse" / "guard").glob("*.py")), ids=lambda p: p.name)
def test_the_guard_imports_no_http_library(path):
    optional = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in node.handlers
        ):
            optional |= imported_by(node.body, "fastsse.guard")
    for name in imported(path, "fastsse.guard"):
        top = name.split(".")[0]
        if name in optional:
            assert top == "opentelemetry", f"{path.name} imports {name}"
            continue
        assert top == "fastsse" or top in sys.stdlib_module_names, f"{path.name} imports {name}"
        assert not name.startswith("fastsse_service"), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", sorted((REPO / "fastsse").glob("*.py")), ids=lambda p: p.name)
def test_the_core_never_imports_the_guard(path):
    assert not any(name.startswith("fastsse.guard") for name in imported(path, "fastsse")), path.name


@pytest.mark.parametrize("path", service_modules(http_layer=False), ids=lambda p: str(p.relative_to(SERVICE)))
def test_the_service_core_imports_no_http_layer(path):
    for name in imported(path, package_of(path)):
        assert not name.startswith("fastsse_service.api"), f"{path.relative_to(REPO)} imports {name}"
        assert name.split(".")[0] not in WEB, f"{path.relative_to(REPO)} imports {name}"


@pytest.mark.parametrize("name", READS)
def test_reads_never_import_the_writer(name):
    path = SERVICE / name
    for module in imported(path, package_of(path)):
        assert not module.startswith(("fastsse_service.writer", "fastsse_service.stores")), f"{name} imports {module}"


@pytest.mark.parametrize("path", sorted(SERVICE.rglob("*.py")), ids=lambda p: str(p.relative_to(SERVICE)))
def test_the_service_uses_the_public_api_of_fastsse_and_no_tool_of_ours(path):
    for name in imported(path, package_of(path)):
        assert not name.startswith("fastsse._"), f"{path.relative_to(REPO)} imports {name}"
        assert name.split(".")[0] not in ("loadtests", "bench", "tests", "service"), (
            f"{path.relative_to(REPO)} imports {name}"
        )


def test_the_rules_see_what_they_forbid(tmp_path):
    """The import reader itself: relative imports resolve, so a rule cannot pass by not
    seeing an import."""
    module = tmp_path / "m.py"
    module.write_text("from ..api.schemas import x\nfrom .. import writer\nimport fastapi.routing\n")
    names = imported(module, "fastsse_service.stores")
    assert {"fastsse_service.api.schemas", "fastsse_service.writer", "fastapi.routing"} <= names
