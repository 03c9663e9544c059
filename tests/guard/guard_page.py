"""The guard page's tables of what an application sees, fault by fault (docs/applications/
guard.md): the SDKs' (held by tests/guard/test_sdks.py) and LiteLLM's (held by the end-to-end
matrix, tests/e2e/test_matrix.py)."""

from __future__ import annotations

from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "applications" / "guard.md"


def table(marker: str) -> dict[tuple[str, str], str]:
    """The table after ``<!-- marker -->``, by (client, fault)."""
    text = PAGE.read_text().split(f"<!-- {marker} -->", 1)[1].strip().split("\n\n", 1)[0]
    rows = [[cell.strip().strip("`") for cell in line.strip("|").split("|")] for line in text.splitlines()]
    head, cells = rows[0], {}
    for row in rows[2:]:
        for fault, cell in zip(head[1:], row[1:], strict=True):
            cells[row[0], fault] = cell
    return cells
