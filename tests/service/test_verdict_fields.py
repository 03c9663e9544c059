"""One list of a stored verdict's fields (service/verdict_fields.py), and everything that must
agree with it: fastsse's Verdict, the migrated table on each backend, the row the ingest route
builds, the API's response schema and the JSON the ingest route writes without the model."""

from __future__ import annotations

from datetime import datetime, timezone

import sqlalchemy as sa

import fastsse
from fastsse._verdict import VERDICT_FIELDS
from fastsse_service.api.schemas import VerdictOut, verdict_json
from fastsse_service.db import make_engine
from fastsse_service.judging import verdict_row
from fastsse_service.models import VERDICTS
from fastsse_service.verdict_fields import FIELDS, POST, VERDICT, WRITER
from loadtests.wire import short_stream

from .conftest import READ


def test_every_field_of_a_verdict_is_stored_once():
    copied = [f.verdict_attr for f in FIELDS if f.source == VERDICT]
    assert sorted(copied) == sorted(VERDICT_FIELDS)
    assert len({f.name for f in FIELDS}) == len(FIELDS)
    assert {f.source for f in FIELDS} == {VERDICT, POST, WRITER}


def test_the_migrated_table_has_exactly_these_columns(database_url):
    engine = make_engine(database_url)
    columns = {c["name"]: c for c in sa.inspect(engine).get_columns("verdicts")}
    engine.dispose()
    assert sorted(columns) == sorted(["id", *(f.name for f in FIELDS)])
    for field in FIELDS:
        column = columns[field.name]
        assert column["nullable"] is field.nullable, field.name
        assert column["type"]._type_affinity is field.sql._type_affinity, field.name
    assert [c.name for c in VERDICTS.columns] == ["id", *(f.name for f in FIELDS)]


def test_the_ingest_row_fills_every_column_but_the_writers():
    row = verdict_row(
        fastsse.scan(short_stream()),
        body_sha256="0" * 64,
        gateway="gw",
        stream_id="s",
        tool="codex",
        upstream_status=200,
        model_requested=None,
        request_id=None,
        attempt=None,
        received_at=datetime.now(timezone.utc),
    )
    assert sorted(row) == sorted(f.name for f in FIELDS if f.source != WRITER)


def test_the_api_shows_every_field_but_the_body_hash_with_its_type():
    schema = VerdictOut.model_json_schema()
    shown = [f for f in FIELDS if f.api_name is not None]
    assert list(schema["properties"]) == ["id", *(f.api_name for f in shown)]
    assert set(schema["required"]) == set(schema["properties"])  # null is said, not left out
    for field in shown:
        prop = schema["properties"][field.api_name]
        types = {p.get("type") for p in prop.get("anyOf", [prop])}
        assert ("null" in types) is field.nullable, field.name
        assert prop.get("description") == field.description, field.name
    assert "body_sha256" not in schema["properties"]


def test_the_ingest_answer_is_the_response_model_as_json():
    row = verdict_row(
        fastsse.scan(short_stream()),
        body_sha256="0" * 64,
        gateway="gw",
        stream_id="s",
        tool="codex",
        upstream_status=200,
        model_requested="gpt-4o",
        request_id="r",
        attempt=1,
        received_at=datetime.now(timezone.utc),
    )
    row |= {"id": 7, "previous_category": None, "previous_retryable": None}
    assert verdict_json(row) == VerdictOut.from_row(row).model_dump_json().encode()


def test_a_category_filter_is_one_of_fastsses_categories(client):
    assert client.get("/v1/verdicts", params={"category": "truncated_length"}, headers=READ).status_code == 200
    wrong = client.get("/v1/verdicts", params={"category": "truncated"}, headers=READ)
    assert wrong.status_code == 422 and "truncated_length" in wrong.text
