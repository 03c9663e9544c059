"""Payload text never reaches the database, the logs, the metrics or a response."""

from __future__ import annotations

import re
import sqlite3
import subprocess

import httpx

from fastsse_service.tap.spool import batch_item
from loadtests.wire import short_stream
from tests.fastsse.events import a_error, a_start, a_text, anthropic, chat_tool_stream

from .conftest import INGEST, INGEST_SECRET, READ, READ_SECRET, WEBHOOK_SECRET

CANARY = "CANARY-payload-7f3a9c51-must-never-be-stored"


def canary_streams() -> list[tuple[dict, bytes]]:
    """The canary in every place a payload can carry it, whole and cut in half.

    (The served model name is metadata the verdict records on purpose, sanitized and capped,
    so the canary is not put there.)
    """
    chat = short_stream(text=f"secret {CANARY} text")
    refusal = chat.replace(b'"content":"secret"', b'"refusal":"' + CANARY.encode() + b'"')
    assert refusal != chat
    return [
        ({"protocol": "chat"}, chat),
        ({"protocol": "chat"}, chat[: chat.index(CANARY.encode()) + 10]),  # cut inside it
        ({"protocol": "chat"}, chat_tool_stream('{"q": "' + CANARY + '"}')),
        ({"protocol": "chat"}, chat_tool_stream('{"q": "' + CANARY)),  # malformed
        ({"protocol": "chat"}, b'data: {"error": {"message": "' + CANARY.encode() + b'", "type": "server_error"}}\n\n'),
        ({"protocol": "anthropic"}, short_stream("anthropic", text=CANARY)),
        ({"protocol": "anthropic"}, anthropic(a_start(), *a_text(0, "Hi"), a_error("overloaded_error", CANARY))),
        (
            {"protocol": "responses"},
            b'event: response.failed\ndata: {"type": "response.failed", '
            b'"response": {"error": {"code": "server_error", "message": "' + CANARY.encode() + b'"}}}\n\n',
        ),
        ({}, b'{"error": {"code": 500, "message": "' + CANARY.encode() + b'", "status": "INTERNAL"}}'),
        ({}, CANARY.encode() + b"\n\n" + CANARY.encode()),  # not SSE at all
        ({"protocol": "chat"}, b"data: " + CANARY.encode() * 50 + b"\n\n"),
        ({}, b'data: {"x": "' + CANARY.encode() + b"\n\n" + chat),  # a broken event
        ({}, chat + b'data: {"choices": [{"delta": {"content": "' + CANARY.encode()),  # residue
        ({}, refusal),
    ]


def database_dump(url: str) -> str:
    if url.startswith("sqlite"):
        connection = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return "\n".join(connection.iterdump())
        finally:
            connection.close()
    target = url.replace("postgresql+psycopg://", "postgresql://")
    return subprocess.run(["pg_dump", "--data-only", target], check=True, capture_output=True, text=True).stdout


def test_canary_never_leaves_the_request_body(service_process, database_url):
    service = service_process({"DATABASE_URL": database_url, "LOG_LEVEL": "debug"})
    answers = []
    first_answers = []
    with httpx.Client(base_url=service.url, timeout=30) as http:
        for i, (params, body) in enumerate(canary_streams()):
            assert CANARY[:10].encode() in body
            response = http.post(
                "/v1/streams",
                content=body,
                headers=INGEST,
                params={
                    "stream_id": f"canary-{i}",
                    "tool": "codex",
                    "request_id": "canary-chain",
                    "attempt": i,
                    **params,
                },
            )
            assert response.status_code == 201, response.text
            answers.append(response.text)
            first_answers.append(response.json())
            again = http.post("/v1/streams", content=body, headers=INGEST, params={"stream_id": f"canary-{i}"})
            answers.append(again.text)
        # in a batch, and in batches that cut their streams wrong, so that payload is read as heads
        items = [
            ({"stream_id": f"canary-batch-{i}", **params}, body) for i, (params, body) in enumerate(canary_streams())
        ]
        batch = b"".join(batch_item(params, body) for params, body in items)
        batched = http.post("/v1/streams/batch", content=batch, headers=INGEST)
        assert [item["status"] for item in batched.json()["items"]] == [201] * len(items), batched.text
        answers.append(batched.text)
        for misframed in (
            batch.replace(b'"length":', b'"length":1', 1),  # longer than it is
            re.sub(rb'"length":\d+', b'"length":12', batch, count=1),  # shorter: payload read as heads
            b'{"stream_id": "x", "length": 0}\n{"' + CANARY.encode() + b'": 1\n',
        ):
            refused = http.post("/v1/streams/batch", content=misframed, headers=INGEST)
            assert refused.status_code in (207, 400, 413), refused.text
            answers.append(refused.text)
        conflict = http.post(
            "/v1/streams", content=b"data: other\n\n", headers=INGEST, params={"stream_id": "canary-0"}
        )
        assert conflict.status_code == 409
        answers.append(conflict.text)
        answers.append(http.get("/v1/verdicts", params={"limit": 1000}, headers=READ).text)
        answers.append(http.get("/v1/rates", params={"by": "gateway,tool,protocol"}, headers=READ).text)
        # and what the dashboard reads and shows
        for path in ("/v1/series", "/v1/series.svg", "/v1/retries", "/v1/requests/canary-chain", "/v1/categories"):
            answers.append(http.get(path, headers=READ).text)
        signed_in = http.post("/signin", content=f"token={READ_SECRET}".encode(), follow_redirects=True)
        answers.append(signed_in.text)  # the dashboard page itself
        assert "signed in as" in signed_in.text
        metrics = http.get("/metrics").text
    categories = {answer["category"] for answer in first_answers}
    # The canary went through many different verdict paths.
    assert {
        "complete",
        "no_end_marker",
        "tool_call_malformed",
        "upstream_error",
        "malformed_event",
        "buffer_residual",
        "content_filtered",
    } <= categories
    service.stop()

    dump = database_dump(database_url)
    assert "canary-3" in dump  # the dump really holds the rows
    assert "fastsse_stream_verdicts_total" in metrics
    for where, text in [
        ("database", dump),
        ("logs", service.log()),
        ("metrics", metrics),
        *(("response", a) for a in answers),
    ]:
        assert CANARY not in text, f"the canary reached the {where}"
        assert CANARY[:20] not in text, f"part of the canary reached the {where}"
        for secret in (INGEST_SECRET, READ_SECRET, WEBHOOK_SECRET):
            assert secret not in text, f"a secret reached the {where}"
