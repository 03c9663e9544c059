"""Directories of files the service reads at run time: the Alembic migrations and the dashboard.

The repository keeps them at its top (``migrations/``, ``dashboard/``); the wheel carries them
inside the package (``service/migrations``, ``service/dashboard``), mapped there at build time.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    packaged = _HERE / name
    return packaged if packaged.is_dir() else _HERE.parent / name
