"""The matrix: every real client against the tap in front of the mock, for every fault of the
protocol it speaks.  Each fault is the mock's -once form (the first generation of the case gets
it, any retry a healthy answer), so a client that retries shows whether it recovers.

Per case it records what the client did (exit status, how much of the answer it printed, what
it said, how many requests it made, graded L0-L3; see clients.GRADES) beside the verdicts the
service stored, and asserts the verdicts: F0 complete; the faulted answer caught with the
category the fault must give; every retry complete.  What a client does is recorded, never
asserted: that is the finding (but a client must handle F0, or the mock is wrong for it).
"""

from __future__ import annotations

from datetime import datetime, timezone

import httpx
import pytest

from loadtests.localhost import wait_until
from loadtests.wire import EXPECTED_OVER_HTTP, FAULTS, applies
from tests.guard.guard_page import table
from tests.service.conftest import INGEST_SECRET, READ

from .clients import CLIENTS, fault_prefix, proxy_model
from .install import installed, status

# A guarded SDK that stops reading at the fault (anthropic's Bedrock client raises botocore's
# ChecksumMismatch at a corrupt frame): the guard tells the application the fault's category,
# and its reporter posts the bytes the SDK read, which the service judges as they are: cut.
STORED_FROM_WHAT_WAS_READ = {("bedrock-invoke", "crc"): "no_end_marker", ("bedrock-converse", "crc"): "no_end_marker"}
GUARD_PAGE = table("what-litellm-sees")
CASES = [(client, fault) for client in CLIENTS for fault in FAULTS if applies(client.protocol, fault)]


def caught_category(categories: list[str]) -> str | None:
    """The faulted attempt's stored category (a retry's is complete), or complete."""
    caught = [c for c in categories if c != "complete"]
    return caught[0] if caught else ("complete" if categories else None)


def stored_since(service_url: str, since: str) -> list[dict]:
    answer = httpx.get(f"{service_url}/v1/verdicts", params={"since": since, "limit": 1000}, headers=READ, timeout=10)
    answer.raise_for_status()
    return sorted(answer.json()["verdicts"], key=lambda v: v["id"])


def settle(tap, service_url: str, since: str, streams: int) -> list[dict]:
    """The verdicts stored since ``since``, once there is one for each of the ``streams`` the
    mock answered and the tap (if the client went through it) has nothing left to post: it
    captures a stream after the client has its end, and posts it in the background.  If that
    never comes, what is stored after 30 s: the test's assertions then say what is missing,
    beside the client's output.  (A guarded client posts its own before it exits.)"""
    stored: list[dict] = []

    def settled() -> bool:
        stored[:] = stored_since(service_url, since)
        return len(stored) >= streams and not (tap and (tap.tap.poster.waiting() or tap.tap._spooling))

    try:
        wait_until(settled, what=f"a verdict for each of the {streams} streams", timeout=30, interval=0.05)
    except AssertionError:
        pass
    return stored


@pytest.mark.parametrize(("client", "fault"), CASES, ids=[f"{c.name.replace(' ', '')}-{f}" for c, f in CASES])
def test_client_against_fault(client, fault, mock, service, tap, guard_path, matrix_rows, tmp_path, request):
    if not installed(client.pin):
        reason = status().get(client.pin.name, {}).get("error", "not installed")
        pytest.fail(
            f"{client.pin.package} {client.pin.version} is not installed: {reason} "
            "(make test installs it: python -m tests.e2e.install)"
        )
    prefix = fault_prefix(client, fault)
    since = datetime.now(timezone.utc).isoformat()
    before = len(mock.entries())
    if client.tapped:
        outcome = client.run(f"{tap.url}/{prefix}", tmp_path / "home")
    elif client.proxied:
        proxy = request.getfixturevalue("litellm_proxy")
        outcome = client.run(
            f"{proxy.url}#{proxy_model(client, fault)}", tmp_path / "home", env={"LITELLM_KEY": proxy.key}
        )
    else:
        env = {
            "PYTHONPATH": str(guard_path),
            "FASTSSE_INGEST": service.url,
            "FASTSSE_INGEST_TOKEN": INGEST_SECRET,
            "FASTSSE_SPOOL_DIR": str(tmp_path / "spool"),
        }
        outcome = client.run(f"http://127.0.0.1:{mock.port}/{prefix}", tmp_path / "home", env=env)
    outcome.requests = mock.entries()[before:]
    streamed = [e for e in outcome.generations if e.get("kind") == "stream"]
    stored = settle(tap if client.tapped else None, service.url, since, len(streamed))
    categories = [v["category"] for v in stored]
    matrix_rows.append(
        {
            "client": client.name,
            "version": client.pin.version,
            "fault": fault,
            "exit": outcome.returncode,
            "printed": outcome.printed(),
            "said": outcome.said(),
            "requests": len(outcome.generations),
            "grade": "ok" if fault == "F0" else outcome.grade(),
            "stored": ", ".join(categories) or "nothing",
        }
    )
    context = (
        f"exit {outcome.returncode}; printed {outcome.printed()}; stored {categories}\nstderr: {outcome.stderr[-1500:]}"
    )

    if (client.name, fault) in GUARD_PAGE:  # what LiteLLM's application sees, as the guard page says
        assert outcome.seen(caught_category(categories)) == GUARD_PAGE[client.name, fault], context
    assert outcome.generations, f"{client.name} made no generation request\n{context}"
    assert {v["tool"] for v in stored} <= {client.tool}, context
    assert {v["protocol"] for v in stored} <= {client.protocol}, context
    if fault == "F0":
        assert outcome.returncode == 0 and outcome.whole, f"a healthy answer broke\n{context}"
        assert categories and set(categories) == {"complete"}, context
        return
    faulted = [e for e in outcome.generations if e.get("applied") == fault]
    assert len(faulted) == 1, f"the fault was applied {len(faulted)} times\n{context}"
    assert len(stored) == len(streamed), f"{len(streamed)} streams, {len(stored)} verdicts\n{context}"
    # One verdict is the faulted attempt's; any other is a healthy retry (the order they were
    # stored in may differ from the order they were made, if a retry's body differed).
    caught = [c for c in categories if c != "complete"]
    guarded = not (client.tapped or client.proxied)
    expected = STORED_FROM_WHAT_WAS_READ.get((client.protocol, fault)) if guarded else None
    assert caught == [expected or EXPECTED_OVER_HTTP[fault]], context
    if "fastsse.guard:" in outcome.stderr and "litellm" in client.name:
        # the guard's failure reads as cleanly through LiteLLM as LiteLLM's own errors: one
        # line, no server traceback (LiteLLM appends one to an exception it cannot map)
        assert "Traceback" not in outcome.stderr and 'File "' not in outcome.stderr, context
    if EXPECTED_OVER_HTTP[fault] in client.raises:  # the guard told the application, with the fault's category
        assert outcome.grade() in ("L2", "L3"), context
        if not client.proxied:  # the proxy's own client gets LiteLLM's error event, not the exception
            told = f"fastsse.guard: {EXPECTED_OVER_HTTP[fault]}" in outcome.stderr
            # (at an error in the stream or a corrupt frame, google-genai and LiteLLM raise
            # their own error and leave the answer unclosed: the guard's failure is not its
            # cause there; the answer is judged when it is let go, or the reporter closes)
            assert told or fault in ("error", "crc"), context
