"""The verdict's JSON as the ingest route writes it equals the documented response model's."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import fastsse
from fastsse_service.api.schemas import VerdictOut, verdict_json
from fastsse_service.judging import verdict_row
from loadtests.wire import short_stream


def stored_row(**changes) -> dict:
    row = verdict_row(
        fastsse.scan(short_stream("chat", "F4")),
        body_sha256="0" * 64,
        gateway="gw1",
        stream_id="s-1",
        tool="codex",
        upstream_status=200,
        model_requested="gpt-4o",
        request_id="r-1",
        attempt=2,
        received_at=datetime(2026, 12, 1, 7, 30, 5, 123456, tzinfo=timezone.utc),
    )
    return {**row, "id": 42, "previous_category": "no_end_marker", "previous_retryable": True, **changes}


def test_verdict_json_is_what_the_model_serializes():
    for row in (
        stored_row(),
        stored_row(received_at=datetime(2026, 12, 1, 7, 30, 5), ended_at=datetime(2026, 12, 1, 7, 29, 0)),
        stored_row(
            upstream_status=None,
            request_id=None,
            attempt=None,
            model_requested=None,
            previous_category=None,
            previous_retryable=None,
        ),
    ):
        assert json.loads(verdict_json(row)) == json.loads(VerdictOut.from_row(row).model_dump_json())
        assert list(json.loads(verdict_json(row))) == list(VerdictOut.model_fields)
