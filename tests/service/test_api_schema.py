"""Schemathesis against the service's OpenAPI document, bounded: requests generated from the
schema (valid and invalid) for every operation, and every answer checked against it: no 5xx,
documented status codes, content types, headers and response schemas, and schema-violating
requests refused.

One check is left out, with its reason: "a schema-valid request is accepted".  ended_at's
bounds (not in the future, not older than the retention) depend on the clock and the
settings, which a JSON schema cannot say: a valid-looking ended_at of 2000-01-01 is a 422 with
its reason, as it should be.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from fastsse_service.app import create_app
from fastsse_service.config import Settings
from fastsse_service.db import migrate

from .conftest import INGEST, READ, TOKENS


def _app():
    """The app on a scratch SQLite file (built at collection: schemathesis parametrizes the
    test from its schema)."""
    directory = tempfile.mkdtemp(prefix="fastsse-schema-")
    atexit.register(shutil.rmtree, directory, True)
    url = f"sqlite:///{directory}/verdicts.sqlite3"
    migrate(url)
    return create_app(
        Settings(
            database_url=url, ingest_tokens=TOKENS["INGEST_TOKENS"], read_tokens=TOKENS["READ_TOKENS"], retention_days=0
        )
    )


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())
# A batch's body is bytes, generated as any other binary body is
schemathesis.serializer.alias("application/x-fastsse-batch", "application/octet-stream")


@schema.parametrize()
# Derandomized: CI sees the same examples every run (a random search that fails one run in
# ten is noise there); a wider search is FASTSSE_SCHEMA_EXAMPLES=500 with a random seed.
@settings(
    max_examples=int(os.environ.get("FASTSSE_SCHEMA_EXAMPLES", "40")),
    deadline=None,
    derandomize="FASTSSE_SCHEMA_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_operation_answers_as_its_schema_says(case):
    headers = INGEST if case.path.startswith("/v1/streams") else READ
    case.call_and_validate(headers=dict(headers), excluded_checks=[positive_data_acceptance])


def test_values_past_what_the_database_holds_are_a_422_not_a_500(client):
    # Found by the test above: the database cannot even be asked about such an id.
    answer = client.get("/v1/verdicts/9223372036854775808", headers=READ)
    assert answer.status_code == 422, answer.text
    assert client.get("/v1/verdicts/9223372036854775807", headers=READ).status_code == 404
    # And a time with no UTC equivalent (found by a wider run of the test above).
    early = client.get("/v1/rates", params={"since": "0001-01-01T00:00:00+00:01"}, headers=READ)
    assert early.status_code == 422 and "out of range" in early.text
