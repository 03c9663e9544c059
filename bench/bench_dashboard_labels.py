"""The dashboard page in Chromium with many tools: how large it gets and how long it blocks.

Issue 25 found that 3,000 tools (any client behind the tap picks its tool by User-Agent) made
``/v1/rates`` 651 KB and the page 94k DOM nodes, blocking it 1.2 s every 10 s. The read API now
keeps the busiest gateways and tools and folds the rest. For each number of tools (side by side
in one run), this fills a scratch SQLite database with their per-minute rollups (a verdict count
per tool that grows with its index), serves it (``fastsse-service serve``, one worker), opens the
page in headless Chromium (Debian's), and after ``--seconds`` of refreshes prints: the DOM's
elements, the bytes the page's reads took at one refresh, the time from navigation to the
matrix drawn, the slowest read (the service's time, mostly), and the main thread's long
tasks (over 50 ms: their count, the longest, their sum).

    python bench/bench_dashboard_labels.py                 # 30, 3,000 and 10,000 tools, ~1 minute
    python bench/bench_dashboard_labels.py --tools 100000

Talks to 127.0.0.1 only, and stops by itself.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_service import Server  # noqa: E402
from fastsse_service.db import migrate  # noqa: E402
from tests.service.test_labels import seed  # noqa: E402

READ_TOKEN = "bench-read-token-of-the-team"
# Long tasks, recorded from the first script on (buffered before the page's own script runs).
OBSERVE = """
window.__long = [];
new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); })
  .observe({ type: "longtask", buffered: true });
"""


def measure(browser, url: str, seconds: float) -> dict:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.add_init_script(OBSERVE)
    page = context.new_page()
    page.goto(f"{url}/signin")
    page.fill("#token", READ_TOKEN)
    page.click("button[type=submit]")
    page.wait_for_selector("table.matrix")
    drawn_ms = page.evaluate("performance.now()")
    page.evaluate("performance.clearResourceTimings()")
    page.wait_for_timeout(seconds * 1000)
    figures = page.evaluate(
        """() => {
          const reads = performance.getEntriesByType("resource").filter((e) => e.name.includes("/v1/"));
          const refreshes = Math.max(1, reads.filter((e) => e.name.includes("by=gateway")).length);
          return {
            nodes: document.getElementsByTagName("*").length,
            bytes_a_refresh: reads.reduce((sum, e) => sum + e.encodedBodySize, 0) / refreshes,
            slowest_read_ms: Math.max(0, ...reads.map((e) => e.duration)),
            long: window.__long,
          };
        }"""
    )
    context.close()
    long = figures.pop("long")
    return {
        **figures,
        "drawn_ms": drawn_ms,
        "long_tasks": len(long),
        "longest_ms": max(long, default=0.0),
        "blocked_ms": sum(long),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, action="append", help="numbers of tools (default 30, 3000, 10000)")
    parser.add_argument("--seconds", type=float, default=11.0, help="refreshes watched (one each 5 s)")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs Debian's chromium")
    from playwright.sync_api import sync_playwright

    results = []
    with tempfile.TemporaryDirectory(prefix="fastsse-labels-") as scratch, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for tools in args.tools or [30, 3_000, 10_000]:
            url = f"sqlite:///{Path(scratch) / f'{tools}.sqlite3'}"
            migrate(url)
            seed(url, tools=tools)
            server = Server(
                [sys.executable, "-m", "fastsse_service", "serve"],
                {"DATABASE_URL": url, "READ_TOKENS": f"team:{READ_TOKEN}", "RETENTION_DAYS": "0"},
                Path(scratch) / f"{tools}.log",
            )
            try:
                results.append((tools, measure(browser, server.url, args.seconds)))
            finally:
                server.stop()
        browser.close()
    print(f"the page after {args.seconds:g} s of refreshes (one each 5 s), per number of tools:")
    print(
        f"{'tools':>7} {'DOM elements':>13} {'KB a refresh':>13} {'drawn ms':>9} {'slowest read ms':>16} "
        f"{'long tasks':>11} {'longest ms':>11} {'blocked ms':>11}"
    )
    for tools, r in results:
        print(
            f"{tools:>7,} {r['nodes']:>13,} {r['bytes_a_refresh'] / 1000:>13.1f} {r['drawn_ms']:>9.0f} "
            f"{r['slowest_read_ms']:>16.0f} {r['long_tasks']:>11} {r['longest_ms']:>11.0f} {r['blocked_ms']:>11.0f}"
        )


if __name__ == "__main__":
    main()
