"""Command line: ``fastsse scan [options] PATH...`` prints one JSON verdict per path.

The only module of the package that does I/O: it reads files (or stdin for ``-``) in chunks
and feeds them to a ``Scanner``, so a file of any size is judged in bounded memory.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import BinaryIO, TextIO

from . import (
    AUTO,
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    IMPLEMENTATION,
    PROTOCOLS,
    TRANSPORTS,
    Scanner,
    __version__,
)

READ_BYTES = 64 * 1024
EXIT_INCOMPLETE = 1  # --fail-on-incomplete and some verdict is not complete
EXIT_UNREADABLE = 2  # some path could not be read (or bad arguments, as argparse does)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastsse",
        description=(
            "Judge captured LLM streams (Server-Sent Events, AWS event streams, NDJSON): complete, or how they failed."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} ({IMPLEMENTATION} scanner)")
    commands = parser.add_subparsers(dest="command", required=True)
    scan = commands.add_parser(
        "scan",
        help="print one JSON verdict per stream file",
        description="Print one JSON object per PATH, one per line, in order. '-' reads stdin.",
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="captured stream file, or - for stdin")
    scan.add_argument(
        "--protocol", choices=(AUTO, *PROTOCOLS), default=AUTO, help="the stream's protocol (default: recognize it)"
    )
    scan.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="eof",
        help="how the upstream connection ended, as the gateway saw it (default: eof)",
    )
    scan.add_argument("--max-event-bytes", type=_positive_int, default=DEFAULT_MAX_EVENT_BYTES)
    scan.add_argument("--max-line-bytes", type=_positive_int, default=DEFAULT_MAX_LINE_BYTES)
    scan.add_argument(
        "--fail-on-incomplete",
        action="store_true",
        help=f"exit {EXIT_INCOMPLETE} if any verdict is not complete",
    )
    return parser


def judge_file(stream: BinaryIO, args: argparse.Namespace) -> dict[str, str | int | bool | None]:
    scanner = Scanner(args.protocol, max_event_bytes=args.max_event_bytes, max_line_bytes=args.max_line_bytes)
    while chunk := stream.read(READ_BYTES):
        scanner.feed(chunk)
    return scanner.close(args.transport).to_dict()


def run_scan(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    exit_code = 0
    stdin_used = False
    for path in args.paths:
        try:
            if path == "-":
                if stdin_used:
                    raise OSError("stdin can be read only once")
                stdin_used = True
                verdict = judge_file(sys.stdin.buffer, args)
            else:
                with open(path, "rb") as stream:
                    verdict = judge_file(stream, args)
        except OSError as exc:
            print(f"fastsse: cannot read {path}: {exc.strerror or exc}", file=err)
            exit_code = EXIT_UNREADABLE
            continue
        out.write(json.dumps({"path": path, **verdict}) + "\n")
        out.flush()
        if args.fail_on_incomplete and not verdict["complete"] and exit_code == 0:
            exit_code = EXIT_INCOMPLETE
    return exit_code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_scan(args)


if __name__ == "__main__":
    sys.exit(main())
