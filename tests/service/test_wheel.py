"""The service as a user installs it: a wheel, a fresh venv, a directory that is not the checkout.

One module-scoped build and venv serve every test here: building the compiled scanner and
installing the service's dependencies take most of a minute.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import httpx
import pytest

from loadtests.wire import short_stream

from .conftest import INGEST, READ, REPO

# What the build needs from the checkout (not .venv, build outputs or caches).
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "*.so",
    "_scanner.c",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    "*.sqlite3*",
)


def run(*command, cwd: Path, env: dict | None = None, timeout: float = 600) -> str:
    result = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin directory, wheel path): the wheel built from a copy of the checkout and
    installed with the service extra into a fresh venv."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCES)
    run(sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--quiet", "--wheel-dir", root / "dist", cwd=root)
    (wheel,) = (root / "dist").glob("fastsse-*.whl")
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    bin_dir = root / "venv" / "bin"
    run(bin_dir / "python", "-m", "pip", "install", "--quiet", f"{wheel}[service]", cwd=root)
    return bin_dir, wheel


@pytest.fixture
def empty_dir(tmp_path):
    """Where the installed commands run: nothing of the checkout is there."""
    where = tmp_path / "elsewhere"
    where.mkdir()
    return where


def clean_env(**extra: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV", "DATABASE_URL")}
    return {**env, **extra}


def test_the_wheel_carries_the_migrations_and_no_build_inputs(installed):
    _bin, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "fastsse_service/migrations/env.py" in names
    assert "fastsse_service/migrations/script.py.mako" in names
    assert any(n.startswith("fastsse_service/migrations/versions/0001_") for n in names)
    for asset in (
        "templates/index.html",
        "templates/signin.html",
        "static/dashboard.js",
        "static/dashboard.css",
        "prometheus/rules.yml",
    ):
        assert f"fastsse_service/dashboard/{asset}" in names, asset
    assert any(n.startswith("fastsse/_scanner.") and n.endswith(".so") for n in names)
    assert "fastsse/py.typed" in names  # the public API's types reach its users
    assert "fastsse/_scanner.pyi" in names
    assert "fastsse/guard/__init__.py" in names and "fastsse_service/reporter.py" in names
    assert not [n for n in names if n.endswith((".pyx", ".pxd", ".h", ".c"))]


def test_the_wheel_installs_two_packages_of_its_own_names_and_every_module(installed):
    """No generic top-level name (``service``, ``migrations``, ``tests``) that another project
    could also install; and every module of service/ is in the wheel (a subpackage missing from
    pyproject.toml's list would install a service that fails at its first import of it)."""
    _bin, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"fastsse", "fastsse_service"}
    for module in (REPO / "service").rglob("*.py"):
        assert f"fastsse_service/{module.relative_to(REPO / 'service').as_posix()}" in names, module


def test_the_installed_commands_print_the_version(installed, empty_dir):
    bin_dir, wheel = installed
    version = wheel.name.split("-")[1]
    assert run(bin_dir / "fastsse", "--version", cwd=empty_dir).strip() == (f"fastsse {version} (cython scanner)")
    assert version in run(bin_dir / "fastsse-service", "--version", cwd=empty_dir)
    where = run(
        bin_dir / "python",
        "-c",
        "import fastsse, fastsse_service; print(fastsse.__file__); print(fastsse_service.__file__)",
        cwd=empty_dir,
    )
    assert str(REPO) not in where  # the installed copy runs, not the checkout


def test_without_extras_the_library_and_its_cli_work_and_the_service_says_what_it_needs(installed, tmp_path):
    """``pip install fastsse``: the library and its command, nothing that fails to import; the
    service's command explains itself instead of a traceback."""
    _bin, wheel = installed
    venv.EnvBuilder(with_pip=True).create(tmp_path / "bare")
    bare = tmp_path / "bare" / "bin"
    run(bare / "python", "-m", "pip", "install", "--quiet", "--no-deps", wheel, cwd=tmp_path)
    assert "fastsse" in run(bare / "fastsse", "--version", cwd=tmp_path)
    stream = tmp_path / "stream.sse"
    stream.write_bytes(short_stream())
    assert '"category": "complete"' in run(bare / "fastsse", "scan", str(stream), cwd=tmp_path)
    result = subprocess.run(
        [bare / "fastsse-service", "serve"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'fastsse[service]'" in result.stderr
    assert "Traceback" not in result.stderr
    installed_modules = run(bare / "python", "-m", "pip", "show", "--files", "fastsse", cwd=tmp_path)
    assert "fastsse/__init__.py" in installed_modules


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migrate_then_serve_from_an_empty_directory(installed, empty_dir, service_process, backend, request):
    bin_dir, wheel = installed
    if backend == "sqlite":
        url = "sqlite:///fresh.sqlite3"  # relative: the working directory, as by default
    else:
        url = request.getfixturevalue("postgres_url")
    env = clean_env(DATABASE_URL=url)
    run(bin_dir / "fastsse-service", "migrate", cwd=empty_dir, env=env)
    if backend == "sqlite":
        tables = (
            sqlite3.connect(empty_dir / "fresh.sqlite3")
            .execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetchall()
        )
        assert {"verdicts", "verdict_rollups", "alembic_version"} <= {t for (t,) in tables}

    service = service_process(env, command=[str(bin_dir / "fastsse-service")], cwd=empty_dir)
    with httpx.Client(base_url=service.url, timeout=30) as http:
        posted = http.post(
            "/v1/streams",
            params={"stream_id": "from-a-wheel", "tool": "codex"},
            content=short_stream("chat", "F4"),
            headers=INGEST,
        )
        assert posted.status_code == 201, posted.text
        assert posted.json()["category"] == "truncated_length"
        listed = http.get("/v1/verdicts", headers=READ).json()["verdicts"]
        assert [(v["stream_id"], v["category"]) for v in listed] == [("from-a-wheel", "truncated_length")]
        assert http.get("/openapi.json").json()["info"]["version"] == wheel.name.split("-")[1]
        assert "Read token" in http.get("/signin").text  # the dashboard is served too
        assert http.get("/static/dashboard.js").status_code == 200
    service.stop()
    assert "Traceback" not in service.log()
    assert sorted(p.name for p in empty_dir.iterdir() if not p.name.startswith("fresh")) == []
