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
import shutil
import tempfile

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from service.app import create_app
from service.config import Settings
from service.db import migrate

from .conftest import INGEST, READ, TOKENS


def _app():
    """The app on a scratch SQLite file (built at collection: schemathesis parametrizes the
    test from its schema)."""
    directory = tempfile.mkdtemp(prefix="fastsse-schema-")
    atexit.register(shutil.rmtree, directory, True)
    url = f"sqlite:///{directory}/verdicts.sqlite3"
    migrate(url)
    return create_app(Settings(database_url=url, ingest_tokens=TOKENS["INGEST_TOKENS"],
                               read_tokens=TOKENS["READ_TOKENS"], retention_days=0))


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


@schema.parametrize()
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_operation_answers_as_its_schema_says(case):
    headers = INGEST if case.path == "/v1/streams" else READ
    case.call_and_validate(headers=dict(headers), excluded_checks=[positive_data_acceptance])
