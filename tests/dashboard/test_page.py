"""The dashboard page in headless Chromium: sign-in, the matrix and categories against
/v1/rates, a cell's selection in the URL, the retries against posted chains, refresh without a
reload, the keyboard, light and dark, and nothing fetched from another origin."""

from __future__ import annotations

import re

import httpx
import pytest

from loadtests.localhost import wait_until
from loadtests.wire import wire
from tests.service.conftest import INGEST, INGEST_SECRET, READ, READ_SECRET

# (tool, protocol, fault, request_id, attempt)
POSTS = [
    ("codex", "responses", "F0", None, None),
    ("codex", "responses", "F0", None, None),
    ("codex", "responses", "F1", "req-a", 1),  # recovered by its retry
    ("codex", "responses", "F0", "req-a", 2),
    ("claude-code", "anthropic", "F4", "req-b", 1),  # a token limit, retried anyway: twice
    ("claude-code", "anthropic", "F4", "req-b", 2),
    ("claude-code", "anthropic", "F0", "req-b", 3),
    ("claude-code", "anthropic", "F0", None, None),
    ("kimi-cli", "chat", "F2C", "req-c", 1),  # never recovered
    ("kimi-cli", "chat", "F0", None, None),
    ("kimi-cli", "chat", "reset", None, None),  # a failure the transport showed: not silent
    ("gemini-cli", "gemini", "F0", None, None),
]


def post_all(base_url: str, posts=POSTS, prefix: str = "s") -> None:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        for i, (tool, protocol, fault, request_id, attempt) in enumerate(posts):
            params = {
                "stream_id": f"{prefix}{i}",
                "tool": tool,
                "protocol": protocol,
                "transport": "reset" if fault == "reset" else "eof",
            }
            if request_id:
                params.update(request_id=request_id, attempt=attempt)
            body = wire(protocol, fault, seed=i).body
            response = http.post("/v1/streams", params=params, content=body, headers=INGEST)
            assert response.status_code == 201, response.text


@pytest.fixture
def dashboard(service_process, database_url):
    service = service_process({"DATABASE_URL": database_url})
    post_all(service.url)
    return service


def sign_in(page, base_url: str, token: str = READ_SECRET, path: str = "/") -> None:
    page.goto(base_url + path)
    assert "/signin" in page.url
    page.fill("#token", token)
    page.click("button[type=submit]")


def rates(base_url: str, **params) -> dict:
    return httpx.get(f"{base_url}/v1/rates", params={"by": "tool,protocol", **params}, headers=READ).json()


def wait_for(condition, timeout: float = 15.0):
    return wait_until(condition, what="the page shows what the test waits for", timeout=timeout, interval=0.2)


def cell_text(page, tool: str, protocol: str) -> str:
    return page.locator(f'.cell[data-tool="{tool}"][data-protocol="{protocol}"]').inner_text()


def test_sign_in_says_what_is_wrong(browser, dashboard):
    page = browser.new_page()
    sign_in(page, dashboard.url, token="not-a-token")
    assert "not known" in page.locator("#message").inner_text()
    page.fill("#token", INGEST_SECRET)
    page.click("button[type=submit]")
    assert "ingest token" in page.locator("#message").inner_text()
    cookies = page.context.cookies()
    assert not [c for c in cookies if c["name"] == "fastsse_session"]
    page.fill("#token", READ_SECRET)
    page.click("button[type=submit]")
    page.wait_for_selector("table.matrix")
    [session] = [c for c in page.context.cookies() if c["name"] == "fastsse_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert READ_SECRET not in session["value"]
    # the cookie opens the read API too, and signing out closes it again
    assert page.request.get(f"{dashboard.url}/v1/rates").status == 200
    page.click("text=Sign out")
    assert "/signin" in page.url
    assert page.request.get(f"{dashboard.url}/v1/rates").status == 401
    page.close()


def test_the_page_shows_what_the_api_says(browser, dashboard, artifacts, database_url):
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    origins = set()
    page.on("request", lambda request: origins.add(re.match(r"^\w+://[^/]+", request.url)[0]))
    sign_in(page, dashboard.url)
    page.wait_for_selector("table.matrix")
    page.wait_for_selector("#series svg")

    answer = rates(dashboard.url, window="24h")
    for group in answer["groups"]:
        text = cell_text(page, group["tool"], group["protocol"])
        assert f"{group['silent']} / {group['total']}" in text, text
        assert f"{group['silent'] / group['total'] * 100:.1f} %" in text, text
    assert "no traffic" in cell_text(page, "codex", "chat")
    # categories: every failure mode the API counts, in the verdict's order
    by_category = {}
    for group in answer["groups"]:
        for category, count in group["by_category"].items():
            by_category[category] = by_category.get(category, 0) + count
    rows = page.locator("#categories tbody tr").all_inner_texts()
    shown = [row.split("\t")[0].strip() for row in rows]
    expected = [
        c
        for c in (
            "limit_exceeded",
            "transport_error",
            "upstream_error",
            "no_end_marker",
            "buffer_residual",
            "malformed_event",
            "sequence_gap",
            "missing_finish_reason",
            "reasoning_exhausted",
            "truncated_length",
            "content_filtered",
            "tool_call_malformed",
            "empty_output",
        )
        if c in by_category
    ]
    assert shown == expected
    for row in rows:
        cells = row.split("\t")
        assert int(cells[2]) == by_category[cells[0].strip()]

    # retries, against the chains posted
    retries = page.locator("#retries tbody tr").all_inner_texts()
    claude = next(r for r in retries if r.startswith("claude-code")).split("\t")
    assert [c.split(" ")[0] for c in claude[1:]] == ["1", "1", "1", "0", "2", "2"]
    kimi = next(r for r in retries if r.startswith("kimi-cli")).split("\t")
    assert [c.split(" ")[0] for c in kimi[1:]] == ["1", "1", "0", "1", "0", "0"]

    page.screenshot(path=str(artifacts / f"dashboard-{backend(database_url)}.png"), full_page=True)

    # a click on a cell filters what is below to it, and the URL holds the view
    page.click('.cell[data-tool="kimi-cli"][data-protocol="chat"]')
    page.wait_for_function("location.search.includes('tool=kimi-cli')")
    assert "protocol=chat" in page.url
    wait_for(lambda: "kimi-cli on chat" in page.locator("#selection-name").inner_text())
    wait_for(lambda: page.locator("#incidents tbody tr").count() == 2)
    incidents = page.locator("#incidents tbody tr").all_inner_texts()
    assert all("kimi-cli" in row for row in incidents)
    assert {"visible", "silent"} == {row.split("\t")[4] for row in incidents}
    # the same link in a new page shows the same view
    shared = context.new_page()
    shared.goto(page.url)
    shared.wait_for_selector('.cell[aria-pressed="true"][data-tool="kimi-cli"]')
    shared.close()

    # a retry chain, opened from the recent retries
    page.click("text=Clear selection")
    page.locator("#chains button.link", has_text="req-b").first.click()
    wait_for(lambda: "3 attempts" in page.locator("#chain").inner_text())
    assert "request=gw1%2Freq-b" in page.url or "request=gw1/req-b" in page.url
    chain = page.locator("#chain tbody tr").all_inner_texts()
    assert [row.split("\t")[2] for row in chain] == ["truncated_length", "truncated_length", "complete"]

    # it refreshes by itself, without a reload, and keeps the view
    page.evaluate("window.__same_page = true")
    post_all(dashboard.url, [("codex", "chat", "F1", None, None)], prefix="late")
    wait_for(lambda: "1 / 1" in cell_text(page, "codex", "chat"))
    assert page.evaluate("window.__same_page") is True
    assert "request=" in page.url
    assert origins == {dashboard.url}
    context.close()


def test_keyboard_and_dark(browser, dashboard, artifacts, database_url):
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_in(page, dashboard.url)
    page.wait_for_selector("table.matrix")
    cell = page.locator('.cell[data-tool="codex"][data-protocol="responses"]')
    cell.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("location.search.includes('tool=codex')")
    page.wait_for_selector('.cell[aria-pressed="true"][data-tool="codex"][data-protocol="responses"]')
    # the keyboard stays on the cell it pressed, after the matrix is drawn again
    assert page.evaluate("document.activeElement.dataset.tool") == "codex"
    page.keyboard.press("Escape")
    page.wait_for_function("!location.search.includes('tool=')")
    page.wait_for_selector('.cell[aria-pressed="true"]', state="detached")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(17, 20, 24)"  # the dark palette
    page.click("#theme")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    page.screenshot(path=str(artifacts / f"dashboard-keyboard-{backend(database_url)}.png"))

    # a custom span: its fields appear, the URL holds it, and the streams of now are in it
    page.select_option("#window", "custom")
    page.wait_for_function("location.search.includes('window=custom')")
    assert page.locator("#custom-span").is_visible()
    assert "since=" in page.url
    wait_for(lambda: "1 / 4" in cell_text(page, "codex", "responses"))
    page.fill("#since", "2020-01-01T00:00")
    page.dispatch_event("#since", "change")
    page.fill("#until", "2020-01-02T00:00")
    page.dispatch_event("#until", "change")
    wait_for(lambda: "No streams in this window" in page.locator("#matrix").inner_text())
    context.close()


def backend(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgres"


def test_ten_thousand_tools_leave_the_page_small_and_every_tool_reachable(
    browser, service_process, sqlite_url, artifacts
):
    """Issue 25: 3,000 tools made the page 94k DOM nodes. Now the matrix has a row for each of
    the 25 busiest tools and one for the others; a tool outside them can still be typed in."""
    from fastsse_service.db import migrate
    from tests.service.test_labels import seed

    migrate(sqlite_url)
    seed(sqlite_url, tools=10_000)
    service = service_process({"DATABASE_URL": sqlite_url})
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    sign_in(page, service.url)
    page.wait_for_selector("table.matrix")
    page.wait_for_selector("#series svg")
    rows = page.locator("table.matrix tbody tr th").all_inner_texts()
    assert rows[:3] == ["tool-09999", "tool-09998", "tool-09997"] and len(rows) == 26
    assert rows[-1] == "9,975 other tools"
    folded = page.locator("table.matrix tr.folded .cell").all_inner_texts()
    # the others, counted (tool-{i} has i + 1 streams a protocol, one silent), not selectable
    assert f"9,975 / {sum(range(1, 9_976)):,}" in folded[0], folded
    assert page.locator("table.matrix tr.folded button").count() == 0
    assert page.locator("#tool-names option").count() == 25
    nodes = page.evaluate("document.getElementsByTagName('*').length")
    assert nodes < 3_000, nodes
    # a folded tool, typed in: the panels below show it alone
    page.fill("#tool", "tool-00007")
    page.press("#tool", "Enter")
    page.wait_for_function("location.search.includes('tool=tool-00007')")
    wait_for(lambda: "tool-00007" in page.locator("#selection-name").inner_text())
    wait_for(lambda: "16 streams" in page.locator("#categories").inner_text())  # 8 a protocol
    page.screenshot(path=str(artifacts / "dashboard-10000-tools.png"), full_page=True)
    page.close()
