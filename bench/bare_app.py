"""The bare endpoint bench_service.py measures the service against: the same server stack, the
same route, no work.  It reads the posted body with ``request.stream()``, as the ingest route
does, and answers a small JSON."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

app = FastAPI()


@app.post("/v1/streams")
async def post_stream(request: Request) -> JSONResponse:
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
    return JSONResponse({"bytes": received}, status_code=201)


@app.get("/healthz")
async def healthz() -> dict:
    return {"status": "ok"}


if __name__ == "__main__":
    # Served exactly as `fastsse-service serve` serves the service (loop, parser, logging).
    import argparse
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from service.__main__ import run_server
    from service.config import get_settings

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    run_server("bench.bare_app:app", host="127.0.0.1", port=args.port, workers=args.workers,
               settings=get_settings())
