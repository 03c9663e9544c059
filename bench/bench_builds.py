"""Two or more builds of the compiled scanner, side by side in one process, in turn.

On a machine whose speed moves from one second to the next, two runs of bench_scanner.py a
minute apart differ by more than the change being measured.  This loads each build's compiled
module (``fastsse/_scanner.*.so`` of each checkout given) into one process and times them in
turn, pass after pass over the same corpus (bench_scanner's, fed in 64 KiB chunks, each stream
judged with the protocol given), so that every build meets the same slow and fast moments; the
best pass of each is reported.  Only the compiled modules differ: the Python parts (the verdict,
the protocol tables) are this checkout's, so the builds must agree on them.

    python bench/bench_builds.py --protocol ollama ../base .         # two checkouts, each built
    python bench/bench_builds.py --protocol responses --passes 400 --size-mb 16 ../base ../exp .
"""

from __future__ import annotations

import argparse
import glob
import importlib.machinery
import importlib.util
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_scanner  # noqa: E402

import fastsse  # noqa: E402


def load_build(checkout: str):
    """The compiled scanner module of the checkout, loaded beside any other."""
    found = glob.glob(os.path.join(checkout, "fastsse", "_scanner.cpython-*.so"))
    if not found:
        raise SystemExit(f"no compiled scanner in {checkout}/fastsse (build it there first)")
    loader = importlib.machinery.ExtensionFileLoader("fastsse._scanner", found[0])
    spec = importlib.util.spec_from_file_location("fastsse._scanner", found[0], loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def one_pass(module, corpus, protocol: str) -> float:
    scanner_class = module.Scanner
    start = time.perf_counter()
    for chunks in corpus:
        scanner = scanner_class(protocol)
        for chunk in chunks:
            scanner.feed(chunk)
        scanner.close()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+", help="checkouts whose fastsse/_scanner*.so to compare")
    parser.add_argument("--protocol", choices=fastsse.PROTOCOLS, required=True)
    parser.add_argument("--passes", type=int, default=200, help="passes per build, in turn (200)")
    parser.add_argument("--size-mb", type=float, default=16.0, help="corpus in MB (16)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    modules = [load_build(checkout) for checkout in args.checkouts]
    streams = bench_scanner.build_corpus(args.protocol, int(args.size_mb * bench_scanner.MB), args.seed)
    corpus = [bench_scanner.split_chunks(stream) for stream in streams]
    total = sum(len(stream) for stream in streams)
    best = [float("inf")] * len(modules)
    for _ in range(args.passes):
        for i, module in enumerate(modules):
            best[i] = min(best[i], one_pass(module, corpus, args.protocol))
    first = total / best[0]
    print(f"{args.protocol}: {total / 1e6:.1f} MB in {len(streams)} streams, best of {args.passes} passes each")
    for checkout, seconds in zip(args.checkouts, best, strict=True):
        rate = total / seconds
        print(f"  {checkout:<40} {rate / 1e6:8.0f} MB/s  {100 * (rate / first - 1):+6.1f} % against the first")


if __name__ == "__main__":
    main()
