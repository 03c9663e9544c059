"""``python -m fastsse_service`` and the ``fastsse-service`` command.

The service's dependencies come with the ``service`` extra.  Without them this says so and
exits with 2, rather than failing with a traceback at the first missing import.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    try:
        from .cli import main as run
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.partition(".")[0] not in ("fastsse", "fastsse_service"):
            print(
                f"fastsse-service needs the service's dependencies ({exc.name} is missing): "
                "pip install 'fastsse[service]'",
                file=sys.stderr,
            )
            return 2
        raise
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
