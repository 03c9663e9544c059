"""Installs the real clients of the end-to-end matrix at their pinned versions, once per machine.

    python -m tests.e2e.install        # make test runs it; quick when all are installed

Each client goes into its own directory under ``$FASTSSE_E2E_HOME`` (default
``~/.cache/fastsse-e2e``), named by its pin, so a fresh clone on the same machine reuses it
and a new pin installs beside the old one.  npm's and pip's own caches keep the downloads.  A
client that cannot be installed is recorded with the reason (``status.json`` beside them): the
matrix then fails for that client with that reason, the rest of the suite goes on.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pin:
    name: str  # the client, as the matrix names it
    manager: str  # npm | pip | pip313 (kimi-cli needs Python 3.13)
    package: str
    version: str
    requirements: str | None = None  # a file beside this one, installed with it (pinned)

    @property
    def directory(self) -> Path:
        return home() / f"{self.name}-{self.version}"


PINS = (
    Pin("openai-python", "pip", "openai", "3.57.0"),
    Pin("anthropic-python", "pip", "anthropic", "2.14.0"),
    Pin("google-genai", "pip", "google-genai", "3.6.1"),
    Pin("boto3", "pip", "boto3", "1.44.8"),
    Pin("anthropic-bedrock", "pip", "anthropic[bedrock]", "2.14.0"),  # its Bedrock client needs boto3
    Pin("ollama-python", "pip", "ollama", "0.6.3"),
    Pin("codex", "npm", "@openai/codex", "0.171.0"),
    Pin("claude-code", "npm", "@anthropic-ai/claude-code", "2.1.332"),
    Pin("kimi-cli", "pip313", "kimi-cli", "1.52.0"),
    # The library and its proxy: litellm[proxy] cannot be installed as such (see the file).
    Pin("litellm", "pip", "litellm", "1.110.2", requirements="litellm-requirements.txt"),
)
BY_NAME = {pin.name: pin for pin in PINS}


def home() -> Path:
    return Path(os.environ.get("FASTSSE_E2E_HOME") or Path.home() / ".cache" / "fastsse-e2e")


def python313() -> str | None:
    """A Python 3.13 for kimi-cli: $FASTSSE_PYTHON313, pyenv's, or python3.13 on the PATH
    (which may be a pyenv shim that runs nothing: each is tried)."""
    found = [
        os.environ.get("FASTSSE_PYTHON313"),
        *sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.13*/bin/python3.13"))),
        shutil.which("python3.13"),
    ]
    for candidate in found:
        if candidate and subprocess.run([candidate, "--version"], capture_output=True, timeout=30).returncode == 0:
            return candidate
    return None


def status() -> dict[str, dict]:
    path = home() / "status.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _run(command: list[str], log) -> None:
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command[:3])}... exited {done.returncode}")


def _install(pin: Pin, log) -> None:
    target = pin.directory
    if target.exists():
        shutil.rmtree(target)
    if pin.manager == "npm":
        if not shutil.which("npm"):
            raise RuntimeError("npm is not installed (apt-get install npm)")
        _run(
            [
                "npm",
                "install",
                "--prefix",
                str(target),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{pin.package}@{pin.version}",
            ],
            log,
        )
        return
    interpreter = python313() if pin.manager == "pip313" else sys.executable
    if interpreter is None:
        raise RuntimeError(f"{pin.package} needs Python 3.13: none found (set FASTSSE_PYTHON313)")
    _run([interpreter, "-m", "venv", str(target)], log)
    _run(
        [
            str(target / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"{pin.package}=={pin.version}",
            *(["-r", str(Path(__file__).resolve().parent / pin.requirements)] if pin.requirements else []),
        ],
        log,
    )


def installed(pin: Pin) -> bool:
    return status().get(pin.name, {}).get("installed") == pin.version and pin.directory.exists()


def main() -> int:
    home().mkdir(parents=True, exist_ok=True)
    record = status()
    with open(home() / "install.log", "a") as log:
        for pin in PINS:
            if installed(pin):
                continue
            started = time.monotonic()
            print(f"installing {pin.package} {pin.version} for the end-to-end matrix ...", file=sys.stderr)
            try:
                _install(pin, log)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                record[pin.name] = {"error": f"{exc} (see {home() / 'install.log'})"}
                print(f"  failed: {exc}", file=sys.stderr)
            else:
                record[pin.name] = {"installed": pin.version, "seconds": round(time.monotonic() - started, 1)}
            (home() / "status.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
