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
