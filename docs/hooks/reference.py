"""MkDocs hook: the reference pages, made from the code at every build, so they cannot drift.

- reference/http-api.md from the service's OpenAPI document;
- reference/metrics.md's table from the metrics the service defines;
- reference/cli.md from the commands' own --help;
- reference/library.md from fastsse's public names and their docstrings;
- changelog.md from CHANGELOG.md.

Nothing here is written to disk: the pages exist only in the built site.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]


def on_files(files, config):
    pages = {
        "reference/http-api.md": http_api,
        "reference/cli.md": command_lines,
        "reference/library.md": library,
        "changelog.md": changelog,
    }
    for uri, make in pages.items():
        files.append(File.generated(config, uri, content=make()))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "reference/metrics.md":
        return markdown.replace("{{ metrics }}", metrics_table())
    return markdown


# -- the HTTP API ----------------------------------------------------------------------------


def http_api() -> str:
    from fastsse_service.app import create_app
    from fastsse_service.config import Settings

    document = create_app(Settings(database_url="sqlite://")).openapi()
    out = [
        "# HTTP API",
        "",
        "Made from the service's OpenAPI document (`GET /openapi.json` on a running service, with "
        "an interactive view at `/docs`). How a post is judged and stored: "
        "[the ingest API](../gateways/ingest-api.md).",
        "",
    ]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            out += [f"## `{method.upper()} {path}`", "", operation.get("summary", ""), ""]
            if operation.get("description"):
                out += [_one_paragraph(operation["description"]), ""]
            parameters = operation.get("parameters", [])
            if parameters:
                out += ["| parameter | in | required | schema | description |", "|---|---|---|---|---|"]
                for parameter in parameters:
                    out.append(
                        f"| `{parameter['name']}` | {parameter['in']} | {'yes' if parameter.get('required') else 'no'} "
                        f"| {_schema(parameter.get('schema', {}), document)} "
                        f"| {_cell(parameter.get('description', ''))} |"
                    )
                out.append("")
            out += ["| status | meaning |", "|---|---|"]
            for status, response in operation.get("responses", {}).items():
                out.append(f"| `{status}` | {_cell(response.get('description', ''))} |")
            out.append("")
    return "\n".join(out)


def _schema(schema: dict, document: dict) -> str:
    if "$ref" in schema:
        return f"`{schema['$ref'].rsplit('/', 1)[-1]}`"
    if "anyOf" in schema:
        return " or ".join(_schema(s, document) for s in schema["anyOf"])
    if "enum" in schema:
        return " / ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type", "")
    if schema.get("format"):
        kind += f" ({schema['format']})"
    bounds = [f"{key} {schema[key]}" for key in ("minimum", "maximum", "maxLength") if key in schema]
    return kind + (f", {', '.join(bounds)}" if bounds else "")


def _cell(text: str) -> str:
    return _one_paragraph(text).replace("|", "\\|")


def _one_paragraph(text: str) -> str:
    return " ".join(text.split())


# -- metrics ---------------------------------------------------------------------------------


def metrics_table() -> str:
    from prometheus_client import Counter, Gauge, Histogram

    from fastsse_service import metrics

    rows = ["| metric | type | labels | what it counts |", "|---|---|---|---|"]
    for value in vars(metrics).values():
        if isinstance(value, (Counter, Gauge, Histogram)):
            name = value._name + ("_total" if value._type == "counter" else "")
            labels = ", ".join(f"`{label}`" for label in value._labelnames)
            rows.append(f"| `{name}` | {value._type} | {labels} | {_cell(value._documentation)} |")
    return "\n".join(rows)


# -- command lines ---------------------------------------------------------------------------

COMMANDS = [
    ("fastsse", ["fastsse", "--help"], ["-m", "fastsse", "--help"]),
    ("fastsse scan", ["fastsse", "scan", "--help"], ["-m", "fastsse", "scan", "--help"]),
    ("fastsse-service", ["fastsse-service", "--help"], ["-m", "fastsse_service", "--help"]),
]
COMMANDS += [
    (f"fastsse-service {name}", [], ["-m", "fastsse_service", name, "--help"])
    for name in ("serve", "migrate", "prune", "tap")
]


def command_lines() -> str:
    out = [
        "# Command lines",
        "",
        "Each command's own `--help`, as this version prints it. The settings the service reads "
        "from the environment: [install and settings](../operators/install.md).",
        "",
    ]
    env = {**os.environ, "COLUMNS": "100"}
    for title, _, arguments in COMMANDS:
        done = subprocess.run(
            [sys.executable, *arguments], capture_output=True, text=True, env=env, timeout=60, check=True
        )
        out += [f"## `{title}`", "", "```text", done.stdout.rstrip(), "```", ""]
    return "\n".join(out)


# -- the library -----------------------------------------------------------------------------


def library() -> str:
    import fastsse

    out = [
        "# Library API",
        "",
        "Everything `fastsse` exports (`fastsse.__all__`), with its docstring. Both twins have this "
        "API; `fastsse.IMPLEMENTATION` says which one runs.",
        "",
    ]
    for name in sorted(fastsse.__all__, key=lambda n: (not n[0].isupper() or n.isupper(), n)):
        value = getattr(fastsse, name)
        if inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value):
            out += _documented(name, value)
            if inspect.isclass(value):
                for member, attribute in vars(value).items():
                    if member.startswith("_") or not callable(attribute):
                        continue
                    out += _documented(f"{name}.{member}", attribute, level="###")
        else:
            shown = json.dumps(value, default=str) if isinstance(value, (dict, tuple, list)) else repr(value)
            if len(shown) > 300:
                shown = shown[:300] + " …"
            out += [f"## `{name}`", "", f"`{shown}`", ""]
    return "\n".join(out)


def _documented(name: str, value, level: str = "##") -> list[str]:
    try:
        signature = str(inspect.signature(value))
    except (TypeError, ValueError):
        signature = ""
    text = inspect.getdoc(value) or ""
    return [f"{level} `{name}{signature}`", "", text, ""]


# -- the changelog ---------------------------------------------------------------------------


def changelog() -> str:
    return (REPO / "CHANGELOG.md").read_text()
