"""MkDocs hook: the reference pages, made from the code at every build, so they cannot drift.

- reference/http-api.md from the service's OpenAPI document;
- reference/metrics.md's table from the metrics the service defines;
- reference/cli.md from the commands' own --help;
- reference/library.md from fastsse's public names and their docstrings;
- changelog.md from CHANGELOG.md.

Pages written by hand get their facts from the code where a table states them:

- the settings tables (operators/install.md, gateways/tap.md): each row's meaning is written in
  the page, its default comes from the settings class, and a setting missing from the page (or
  a row naming none) fails the build;
- verdict/protocols.md's finish reasons of Responses, Anthropic, Gemini, Bedrock's Converse and
  Ollama, each judged by fastsse from a small stream at build time;
- verdict/categories.md's order, retryability and fields, checked against fastsse's.

Nothing here is written to disk: the pages exist only in the built site.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # loadtests.eventstream writes Bedrock's frames for the tables


def service(module: str = ""):
    """A module of the service, which is always imported as ``fastsse_service`` (the build maps
    the repository's ``service/`` folder to it; ``service/__init__.py`` refuses any other name)."""
    try:
        return importlib.import_module("fastsse_service" + (f".{module}" if module else ""))
    except ModuleNotFoundError as exc:
        if exc.name != "fastsse_service":
            raise  # a dependency is missing: its name says which
        raise PluginError("the docs are made from the service: pip install -e '.[service,docs]' first") from exc


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
    uri = page.file.src_uri
    if uri == "reference/metrics.md":
        markdown = markdown.replace("{{ metrics }}", metrics_table())
    if uri == "verdict/protocols.md":
        markdown = markdown.replace("{{ finish_reasons }}", finish_reason_tables())
        markdown = markdown.replace("{{ output_kinds }}", output_kind_tables())
        markdown = markdown.replace("{{ invoke_families }}", invoke_family_tables())
    if uri == "verdict/categories.md":
        check_categories(markdown)
    return SETTINGS_TABLE.sub(lambda match: settings_table(match[1], match[2], uri), markdown)


# -- the HTTP API ----------------------------------------------------------------------------


def http_api() -> str:
    settings = service("config").Settings(database_url="sqlite://")
    document = service("app").create_app(settings).openapi()
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

    metrics = service("metrics")
    rows = ["| metric | type | labels | what it counts |", "|---|---|---|---|"]
    for value in vars(metrics).values():
        if isinstance(value, (Counter, Gauge, Histogram)):
            name = value._name + ("_total" if value._type == "counter" else "")
            labels = ", ".join(f"`{label}`" for label in value._labelnames)
            rows.append(f"| `{name}` | {value._type} | {labels} | {_cell(value._documentation)} |")
    return "\n".join(rows)


# -- settings --------------------------------------------------------------------------------

# "<!-- settings: Settings -->" on the line before a table of "| variable | meaning |" rows.
SETTINGS_TABLE = re.compile(r"^<!-- settings: (\w+) -->\n((?:\|.*(?:\n|$))+)", re.M)


def settings_table(class_name: str, table: str, uri: str) -> str:
    settings = getattr(service("config"), class_name)
    prefix = settings.model_config.get("env_prefix", "")
    fields = {(prefix + name).upper(): field for name, field in settings.model_fields.items()}
    out = ["| variable | default | meaning |", "|---|---|---|"]
    shown: set[str] = set()
    for row in table.splitlines()[2:]:
        variables, _, meaning = row.strip().removeprefix("|").partition(" | ")
        names = re.findall(r"`([A-Z0-9_]+)`", variables)
        unknown = [name for name in names if name not in fields]
        if not names or unknown:
            raise PluginError(f"{uri}: {variables.strip()} is not a setting of {class_name}")
        shown.update(names)
        defaults = " / ".join(_default(name, fields[name].default) for name in names)
        out.append(f"| {variables.strip()} | {defaults} | {meaning.strip().removesuffix('|').strip()} |")
    missing = sorted(fields.keys() - shown)
    if missing:
        raise PluginError(f"{uri}: the settings table leaves out {', '.join(missing)} ({class_name} has them)")
    return "\n".join(out) + "\n"


def _default(name: str, value) -> str:
    if value is None or value == "":
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (int, float)):
        if name.endswith("_BYTES") and value % 1024**2 == 0:
            return f"{value // 1024**3} GiB" if value % 1024**3 == 0 else f"{value // 1024**2} MiB"
        return f"`{int(value) if float(value).is_integer() else value}`"
    if isinstance(value, str) and "," in value:
        return ", ".join(value.split(","))  # a list: plain text, so that the cell wraps
    return f"`{value}`"


# -- the verdict ----------------------------------------------------------------------------


def check_categories(markdown: str) -> None:
    """The page's table of categories is written by hand (its meanings are prose); its order, its
    retryable column and the list of a verdict's fields are fastsse's."""
    import fastsse

    rows = re.findall(r"^\| \d+ \| `(\w+)` \|.*\| (yes|no)\b[^|]*\|$", markdown, re.M)
    if [category for category, _ in rows] != list(fastsse.CATEGORIES):
        raise PluginError("verdict/categories.md: the table's categories are not fastsse.CATEGORIES, in order")
    for category, retryable in rows:
        if (retryable == "yes") != fastsse.RETRYABLE[category]:
            raise PluginError(f"verdict/categories.md: {category}'s retryable is {fastsse.RETRYABLE[category]}")
    fields = markdown[markdown.index("Fields of a `Verdict`") :].split("\n\n")[0]
    for field in fastsse.scan(b"", "auto", "eof").to_dict():
        if f"`{field}`" not in fields:
            raise PluginError(f"verdict/categories.md: the verdict's field {field} is not among its fields")


def finish_reason_tables() -> str:
    """Every finish reason fastsse knows for Responses, Anthropic, Gemini, Bedrock's Converse and
    Ollama, and what fastsse makes of it: each value is sent in a small stream with visible text
    and judged."""
    import fastsse
    from fastsse import _protocols

    out = []
    builders = (
        ("responses", _responses),
        ("anthropic", _anthropic),
        ("gemini", _gemini),
        ("bedrock-converse", _converse),
        ("ollama", _ollama),
    )
    for protocol, build in builders:
        out += [
            f"### `{protocol}`",
            "",
            "| value | meaning | normalized | category | retryable | source |",
            "|---|---|---|---|---|---|",
        ]
        for value in _protocols.FINISH_REASONS[protocol]:
            meaning, source = _protocols.FINISH_MEANINGS[protocol][value]
            verdict = fastsse.scan(build(value), protocol, "eof")
            if verdict.finish_reason_raw != value:
                raise PluginError(f"the {protocol} stream made for {value!r} did not carry it: {verdict.to_dict()}")
            out.append(
                f"| `{value}` | {meaning} | `{verdict.finish_reason}` | `{verdict.category}` | "
                f"{'yes' if verdict.retryable else 'no'} | {source} |"
            )
        out.append("")
    return "\n".join(out)


def invoke_family_tables() -> str:
    """bedrock-invoke's model families with events of their own: what fastsse reads of them,
    and each value of their end field sent in a stream of that family (the example event, then
    Bedrock's last chunk with the value) and judged."""
    import fastsse
    from fastsse import _protocols as d
    from loadtests import eventstream

    out = [
        "| family | its events (an example) | the end field | value | meaning | category | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for family, table in d.BEDROCK_INVOKE_FAMILIES.items():
        shown = (family, f"`{json.dumps(table['example'], separators=(',', ':'))}`", f"`{table['end']}`")
        for value, (meaning, source) in table["values"].items():
            last = _set_path({}, table["end"], value)
            last[d.BEDROCK_INVOKE_END] = {"inputTokenCount": 1, "outputTokenCount": 1}
            stream = eventstream.chunk(table["example"]) + eventstream.chunk(last)
            verdict = fastsse.scan(stream, "bedrock-invoke", "eof")
            if verdict.finish_reason_raw != value:
                raise PluginError(f"the {family} stream made for {value!r} did not carry it: {verdict.to_dict()}")
            out.append(f"| {' | '.join(shown)} | `{value}` | {meaning} | `{verdict.category}` | {source} |")
            shown = ("", "", "")  # the family's columns once
    return "\n".join(out) + "\n"


def _set_path(obj: dict, path: str, value: str) -> dict:
    """obj with value at a JSON_PATHS-style path ("a.b", "a[].b": one element)."""
    head, _, rest = path.partition(".")
    if not rest:
        obj[head] = value
    elif head.endswith("[]"):
        obj[head[:-2]] = [_set_path({}, rest, value)]
    else:
        obj[head] = _set_path({}, rest, value)
    return obj


def output_kind_tables() -> str:
    """What each Responses output item, Anthropic content block and Converse block start is to
    fastsse."""
    from fastsse import _protocols as d

    kinds = {
        d.OUT_NONE: "nothing (bookkeeping)",
        d.OUT_TEXT: "text, when its text is not empty (a refusal part: a refusal)",
        d.OUT_REASONING: "reasoning",
        d.OUT_TOOL: "a tool call",
        d.OUT_OTHER: "output that is not text",
    }
    out = []
    for title, table in (
        ("Responses output items (`item.type`)", d.RESPONSES_ITEMS),
        ("Anthropic content blocks", d.ANTHROPIC_BLOCKS),
        ("Bedrock Converse block starts (the member of `start`)", d.CONVERSE_BLOCKS),
    ):
        out += [f"### {title}", "", "| type | what it is | counts as | source |", "|---|---|---|---|"]
        out += [f"| `{name}` | {what} | {kinds[kind]} | {source} |" for name, (kind, what, source) in table.items()]
        out.append("")
    return "\n".join(out)


def _event(payload: dict, name: str | None = None) -> bytes:
    data = json.dumps(payload, separators=(",", ":"))
    return ((f"event: {name}\n" if name else "") + f"data: {data}\n\n").encode()


def _responses(value: str) -> bytes:
    start = {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "status": "in_progress"}}
    text = {"type": "response.output_text.delta", "sequence_number": 1, "delta": "Hi"}
    if value in ("completed", "failed", "cancelled"):  # a response.status
        end = {"type": "response.completed", "sequence_number": 2, "response": {"id": "r", "status": value}}
    else:  # an incomplete_details.reason
        response = {"id": "r", "status": "incomplete", "incomplete_details": {"reason": value}}
        end = {"type": "response.incomplete", "sequence_number": 2, "response": response}
    return b"".join(_event(event, event["type"]) for event in (start, text, end))


def _anthropic(value: str) -> bytes:
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "stop_reason": None}
    events = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": value}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    return b"".join(_event(event, event["type"]) for event in events)


def _gemini(value: str) -> bytes:
    def chunk(text: str, **finish) -> bytes:
        return _event({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0, **finish}]})

    return chunk("Hi") + chunk("!", finishReason=value)


def _converse(value: str) -> bytes:
    from loadtests import eventstream

    return b"".join(
        eventstream.event(name, payload)
        for name, payload in (
            ("messageStart", {"role": "assistant"}),
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
            ("contentBlockStop", {"contentBlockIndex": 0}),
            ("messageStop", {"stopReason": value}),
        )
    )


def _ollama(value: str) -> bytes:
    from fastsse import _protocols

    last = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": value}
    if value == _protocols.OLLAMA_DONE_FINISH:  # the value of a done line without done_reason
        del last["done_reason"]
    lines = [{"model": "m", "message": {"role": "assistant", "content": "Hi"}, "done": False}, last]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


# -- command lines ---------------------------------------------------------------------------

# Each command line, and its arguments to `python -m`.
COMMANDS = [
    ("fastsse", ["fastsse", "--help"]),
    ("fastsse scan", ["fastsse", "scan", "--help"]),
    ("fastsse-service", ["fastsse_service", "--help"]),
]
COMMANDS += [
    (f"fastsse-service {name}", ["fastsse_service", name, "--help"]) for name in ("serve", "migrate", "prune", "tap")
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
    for title, arguments in COMMANDS:
        done = subprocess.run(
            [sys.executable, "-m", *arguments],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=60,
            check=True,
        )
        out += [f"## `{title}`", "", "```text", done.stdout.rstrip(), "```", ""]
    return "\n".join(out)


# -- the library -----------------------------------------------------------------------------


def library() -> str:
    import fastsse
    import fastsse.guard

    out = [
        "# Library API",
        "",
        "Everything `fastsse` exports (`fastsse.__all__`), with its docstring. Both twins have this "
        "API; `fastsse.IMPLEMENTATION` says which one runs.",
        "",
    ]
    out += _exported(fastsse, "", "##")
    out += [
        "## The guard: `fastsse.guard`",
        "",
        "Everything `fastsse.guard` exports ([how to use it](../applications/guard.md)).",
        "",
    ]
    out += _exported(fastsse.guard, "fastsse.guard.", "###")
    return "\n".join(out)


def _exported(module, prefix: str, level: str) -> list[str]:
    out: list[str] = []
    for name in sorted(module.__all__, key=lambda n: (not n[0].isupper() or n.isupper(), n)):
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value):
            out += _documented(prefix + name, value, level)
            if inspect.isclass(value):
                for member, attribute in vars(value).items():
                    if member.startswith("_") or not callable(attribute):
                        continue
                    out += _documented(f"{prefix}{name}.{member}", attribute, level=level + "#")
        else:
            shown = json.dumps(value, default=str) if isinstance(value, (dict, tuple, list)) else repr(value)
            if isinstance(value, frozenset):
                shown = json.dumps(sorted(value))
            if len(shown) > 300:
                shown = shown[:300] + " …"
            out += [f"{level} `{prefix}{name}`", "", f"`{shown}`", ""]
    return out


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
