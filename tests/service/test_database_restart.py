"""A PostgreSQL server stopped and restarted under traffic loses no acknowledged verdict.

The test runs its own throwaway server (initdb + pg_ctl), never the shared one: stopping that
would break everybody else's tests.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from sqlalchemy import create_engine, select

from fastsse_service.models import StoredVerdict
from loadtests.localhost import wait_until
from loadtests.throwaway_postgres import ThrowawayPostgres
from loadtests.wire import short_stream
from tests import dependencies

from .conftest import INGEST


@pytest.fixture
def throwaway_postgres():
    dependencies.postgres_server_programs()
    server = ThrowawayPostgres()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


def test_no_acknowledged_verdict_is_lost_across_a_database_crash(throwaway_postgres, service_process):
    database = throwaway_postgres
    service = service_process({"DATABASE_URL": database.url, "WRITE_TIMEOUT_SECONDS": "10"})
    body = short_stream(text="a reasonably long answer " * 20)
    acknowledged: list[str] = []
    refused: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def traffic(worker: int) -> None:
        with httpx.Client(base_url=service.url, timeout=30) as http:
            n = 0
            while not stop.is_set():
                stream_id = f"t{worker}-{n}"
                n += 1
                response = http.post("/v1/streams", params={"stream_id": stream_id}, content=body, headers=INGEST)
                with lock:
                    if response.status_code in (200, 201):
                        acknowledged.append(stream_id)
                    else:
                        assert response.status_code == 503, response.text
                        assert response.headers["retry-after"]
                        refused.append(stream_id)
                        time.sleep(0.05)

    threads = [threading.Thread(target=traffic, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(acknowledged) >= 20, what="traffic acknowledged before the crash")
        before_crash = len(acknowledged)
        database.stop("immediate")  # like a crash: no shutdown checkpoint
        wait_until(lambda: refused, what="the outage noticed: a post refused with 503")
        during_outage = len(acknowledged)
        database.start()
        wait_until(lambda: len(acknowledged) >= during_outage + 50, what="the service recovered by itself", timeout=30)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)

    assert before_crash > 0
    assert refused, "the outage was never noticed"
    assert len(acknowledged) >= during_outage + 50, "the service did not recover by itself"

    # Retried refusals are stored once: 201 if the first try was lost, 200 if it had committed.
    with httpx.Client(base_url=service.url, timeout=30) as http:
        for stream_id in refused:
            response = http.post("/v1/streams", params={"stream_id": stream_id}, content=body, headers=INGEST)
            assert response.status_code in (200, 201)

    engine = create_engine(database.url)
    with engine.connect() as connection:
        stored = set(connection.execute(select(StoredVerdict.stream_id)).scalars())
    engine.dispose()
    lost = [stream_id for stream_id in acknowledged if stream_id not in stored]
    assert lost == []
    assert set(refused) <= stored
    assert len(stored) == len(set(acknowledged) | set(refused))
