"""How many instructions the compiled scanner executes per byte: a figure the machine's noise
does not move.

Wall-clock figures on a shared 2-core machine vary by 5-10 % from run to run, which hides a
change of 1-2 %.  This counts the instructions executed inside ``Scanner.feed`` and
``Scanner.close`` (valgrind's callgrind, which simulates the CPU: the same build and input give
the same count) while judging bench_scanner's corpus, fed in its 64 KiB chunks.  Compare two
builds by running this in each checkout::

    python bench/bench_instructions.py             # 1 MB per protocol, about 2 minutes
    python bench/bench_instructions.py --protocol chat --size-mb 2
    python bench/bench_instructions.py --given     # each stream judged as its protocol

Streams are judged as ``auto`` by default (``Scanner()``), as the figures in
docs/performance.md were counted: an auto stream's first event is read to name its protocol, so
templates cannot count it.  ``--given`` judges each as its protocol, as bench_scanner.py times
them (Ollama's first line is then a template's too).

Needs ``valgrind`` (Debian package) and the compiled scanner.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fastsse  # noqa: E402

PROTOCOLS = fastsse.PROTOCOLS


def judge_corpus(protocol: str, size_mb: float, seed: int, given: bool) -> None:
    """What runs under valgrind: build the corpus, then judge it once."""
    import bench_scanner

    if fastsse.IMPLEMENTATION != "cython":
        raise SystemExit("the compiled scanner is not built: nothing to count")
    corpus = [
        bench_scanner.split_chunks(stream) for stream in bench_scanner.build_corpus(protocol, int(size_mb * 1e6), seed)
    ]
    for chunks in corpus:
        scanner = fastsse.Scanner(protocol if given else "auto")
        for chunk in chunks:
            scanner.feed(chunk)
        scanner.close()
    print(f"bytes={sum(len(chunk) for chunks in corpus for chunk in chunks)}")


def count(protocol: str, size_mb: float, seed: int, given: bool) -> tuple[int, int]:
    """(instructions, bytes judged)."""
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={scratch}/callgrind.out",
                "--collect-atstart=no",
                "--toggle-collect=__pyx_pw_*Scanner_*feed",
                "--toggle-collect=__pyx_pw_*Scanner_*close",
                sys.executable,
                __file__,
                "--judge",
                protocol,
                "--size-mb",
                str(size_mb),
                "--seed",
                str(seed),
                *(["--given"] if given else []),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"Collected\s*:\s*(\d+)", result.stderr)
    judged = re.search(r"^bytes=(\d+)$", result.stdout, re.M)
    if result.returncode != 0 or not found or not judged:
        raise SystemExit(f"valgrind failed for {protocol}:\n{result.stderr[-2000:]}")
    return int(found.group(1)), int(judged.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=PROTOCOLS, action="append")
    parser.add_argument("--size-mb", type=float, default=1.0, help="corpus per protocol (1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--given", action="store_true", help="judge each stream as its protocol (default: auto)")
    parser.add_argument("--judge", choices=PROTOCOLS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.judge:
        judge_corpus(args.judge, args.size_mb, args.seed, args.given)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    import fastsse

    print(
        f"fastsse {fastsse.__version__} from {Path(fastsse.__file__).parent}: instructions "
        f"in Scanner.feed and close, bench_scanner's corpus ({args.size_mb:g} MB per protocol, "
        f"seed {args.seed}, 64 KiB chunks, judged as {'their protocol' if args.given else 'auto'})"
    )
    for protocol in args.protocol or PROTOCOLS:
        instructions, judged = count(protocol, args.size_mb, args.seed, args.given)
        print(
            f"  {protocol:<10} {instructions:>14,} instructions  {judged:>11,} bytes  "
            f"{instructions / judged:6.2f} per byte",
            flush=True,
        )


if __name__ == "__main__":
    main()
