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
    from served import serve

    serve("bench.bare_app:app")
