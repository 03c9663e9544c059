"""Lint, format and types, as part of the suite (so CI runs them with everything else): ruff with the
rule set in pyproject.toml over the whole repository, ruff format, mypy over fastsse/ and service/, and
mypy --strict over fastsse/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *command], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    result = run("ruff", "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing():
    result = run("mypy", "--no-incremental", "--cache-dir", "/dev/null")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


def test_ruff_format_changes_nothing():
    result = run("ruff", "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pre_commit_configuration_is_valid_and_runs_what_ci_runs():
    result = run("pre_commit", "validate-config", ".pre-commit-config.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    config = (REPO / ".pre-commit-config.yaml").read_text()
    for command in ("ruff check", "ruff format --check", ".venv/bin/mypy", "make test-fast", "make test\n"):
        assert command in config, command


def test_every_dependency_is_pinned_in_the_constraints():
    """What the Makefile installs is what constraints.txt pins: a dependency added to
    pyproject.toml without `make constraints` would run at whatever version came out last."""
    import re

    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {*project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted.update(extra)
    pinned = {
        line.split("==")[0].lower().replace("_", "-")
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    for requirement in wanted:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)[0].lower().replace("_", "-")
        assert name in pinned, f"{name} is not pinned in constraints.txt (make constraints)"


def test_mypy_strict_on_the_library():
    result = run("mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null", "-p", "fastsse")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
