"""The docs site builds strictly, the README stays short, and neither names a file that is
not there.  The reference pages are made from the code at build time (docs/hooks/reference.py),
so they are checked here for what they must hold."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted((REPO / "docs").rglob("*.md"))
TOP = ("fastsse/", "service/", "tests/", "loadtests/", "bench/", "dashboard/", "deploy/", "migrations/", "docs/")
FILES = ("LICENSE", "CHANGELOG.md", "README.md", "Makefile", "pyproject.toml", "setup.py", "constraints.txt")
FILES += ("mkdocs.yml", "alembic.ini", "MANIFEST.in", ".ci/run", ".pre-commit-config.yaml")
# `path` in backticks that looks like one of the repository's files or folders.
PATH = re.compile(
    r"`((?:" + "|".join(re.escape(t) for t in TOP) + r")[\w./-]*|" + "|".join(re.escape(f) for f in FILES) + r")`"
)
# A Markdown link to a file of the repository: [text](path) or [text](path#anchor).
LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)#\s]+)(?:#[^)]*)?\)")
# What makes a browser fetch: any URL attribute of any element but a link (<a href>), and url()
# in a style.  A foreign origin starts with a scheme (http:, https:) or with "//".
FETCHES = re.compile(
    r"<(?!a\b)\w+\b[^>]*?\s(?:src|href|srcset|data|poster|xlink:href)\s*=\s*[\"']?\s*(?:https?:)?//"
    r"|url\(\s*[\"']?\s*(?:https?:)?//"
    r"|@import\s+(?:url\()?\s*[\"']?\s*(?:https?:)?//",
    re.I,
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= 300, f"README.md has {lines} lines: the rest belongs in the docs site"


@pytest.mark.parametrize("page", [REPO / "README.md", *PAGES], ids=lambda p: str(p.relative_to(REPO)))
def test_every_file_named_exists(page):
    for match in PATH.finditer(page.read_text()):
        path = match[1].rstrip(".,")
        if any(ch in path for ch in "*{<"):
            continue  # a pattern, not a file
        assert (REPO / path).exists(), f"{page.relative_to(REPO)} names {path}, which is not in the repository"


def test_every_file_the_readme_links_exists():
    """The README is read on a forge as well as in the checkout: its links to the docs pages, the
    licence and the changelog must lead somewhere (the site's own links are checked by the
    strict build)."""
    links = LINK.findall((REPO / "README.md").read_text())
    assert links, "the README links to no page"
    for link in links:
        assert (REPO / link).exists(), f"README.md links to {link}, which is not in the repository"


def test_the_site_loads_nothing_from_another_origin(site):
    """Readers may be offline: scripts, styles, fonts and images come with the site; only a
    link (<a href>) may lead elsewhere."""
    for page in [*site.rglob("*.html"), *site.rglob("*.css"), *site.rglob("*.svg")]:
        text = page.read_text()
        fetch = FETCHES.search(text)
        assert fetch is None, f"{page.relative_to(site)} fetches from another origin: {fetch[0][:200]}"
        assert "fonts.googleapis" not in text, page.relative_to(site)


def test_the_check_for_other_origins_sees_what_a_browser_would_fetch():
    fetched = [
        '<script src="https://cdn.example/x.js">',
        "<link rel=stylesheet href='//fonts.example/css'>",
        '<img alt="" srcset="https://img.example/a.png 2x">',
        '<div style="background: url(https://img.example/b.png)">',
        '@import url("https://fonts.example/c.css");',
    ]
    kept = [
        '<a href="https://example.org/">',
        '<img src="../images/dashboard.png">',
        '<svg xmlns="http://www.w3.org/2000/svg">',
    ]
    assert all(FETCHES.search(text) for text in fetched)
    assert not any(FETCHES.search(text) for text in kept)


def test_the_reference_pages_hold_what_the_code_has(site):
    from prometheus_client import Counter, Gauge, Histogram

    import fastsse
    from fastsse import _protocols
    from fastsse_service import metrics
    from fastsse_service.app import create_app
    from fastsse_service.config import Settings, TapSettings

    api = (site / "reference" / "http-api" / "index.html").read_text()
    for path in create_app(Settings(database_url="sqlite://")).openapi()["paths"]:
        assert path.split("{")[0] in api, path
    shown = (site / "reference" / "metrics" / "index.html").read_text()
    for value in vars(metrics).values():
        if isinstance(value, (Counter, Gauge, Histogram)):
            assert value._name in shown, value._name
    library = (site / "reference" / "library" / "index.html").read_text()
    for name in fastsse.__all__:
        assert name in library, name
    for settings, page in ((Settings, "operators/install"), (TapSettings, "gateways/tap")):
        shown = (site / page / "index.html").read_text()
        prefix = settings.model_config.get("env_prefix", "")
        for name in settings.model_fields:
            assert f"<code>{(prefix + name).upper()}</code>" in shown, (name, page)
    protocols = (site / "verdict" / "protocols" / "index.html").read_text()
    for protocol in ("responses", "anthropic", "gemini"):
        for value in _protocols.FINISH_REASONS[protocol]:
            assert f"<code>{value}</code>" in protocols, (protocol, value)
    cli = (site / "reference" / "cli" / "index.html").read_text()
    for command in ("--fail-on-incomplete", "--workers", "--upstream", "--days"):
        assert command in cli, command
    assert "Unreleased" in (site / "changelog" / "index.html").read_text()


def test_the_dashboard_picture_is_there(site):
    assert (site / "images" / "dashboard.png").stat().st_size > 10_000
    assert "<svg" in (site / "images" / "architecture.svg").read_text()


def _signing_examples() -> tuple[str, str]:
    page = (REPO / "docs" / "gateways" / "signing.md").read_text()
    (python,) = re.findall(r"```python\n(.*?)```", page, re.S)
    shells = [block for block in re.findall(r"```sh\n(.*?)```", page, re.S) if "openssl" in block]
    assert len(shells) == 1
    return python, shells[0]


@pytest.fixture
def signing_service(tmp_path):
    """The service on SQLite with the signing examples' gateway (its secret is the one the
    curl example shows), in a thread of the test process."""
    from fastsse_service.app import create_app
    from fastsse_service.config import Settings
    from fastsse_service.db import migrate
    from tests.service.conftest import WEBHOOK_SECRET, ThreadServer

    url = f"sqlite:///{tmp_path / 'verdicts.sqlite3'}"
    migrate(url)
    settings = Settings(
        database_url=url, ingest_tokens=f"signer:{WEBHOOK_SECRET}", read_tokens="team:a-read-token-of-the-team"
    )
    with ThreadServer(create_app(settings)) as server:
        yield server


def test_the_python_signing_example_signs_as_the_service_checks(signing_service):
    """docs/gateways/signing.md's Python, run: the service stores what it signs."""
    import httpx

    from tests.service.conftest import WEBHOOK_SECRET

    python, _ = _signing_examples()
    namespace: dict = {}
    exec(python, namespace)
    target = "/v1/streams?stream_id=from-python&tool=codex&model_requested=gpt-4.1"
    body = b"data: [DONE]\n\n"
    headers = namespace["signed_headers"](WEBHOOK_SECRET, target, body)
    answer = httpx.post(signing_service.url + target, content=body, headers=headers)
    assert answer.status_code == 201 and answer.json()["gateway"] == "signer", answer.text
    target = target.replace("from-python", "from-python-gzip")
    compressed = gzip.compress(body)
    headers = namespace["signed_headers"](WEBHOOK_SECRET, target, compressed, "gzip")
    answer = httpx.post(signing_service.url + target, content=compressed, headers=headers)
    assert answer.status_code == 201 and answer.json()["bytes"] == len(body), answer.text


def test_the_curl_and_openssl_signing_example_signs_as_the_service_checks(signing_service, tmp_path):
    """The shell example, run by bash with curl and openssl as the page has it, against the
    service at its own port."""
    _, shell = _signing_examples()
    (tmp_path / "capture.sse").write_bytes(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n')
    script = shell.replace("http://127.0.0.1:8000", signing_service.url)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert '"gateway":"signer"' in done.stdout and '"stream_id":"req-42"' in done.stdout, done.stdout
