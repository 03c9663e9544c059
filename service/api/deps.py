"""Dependencies the routes declare: a database session, and who is calling."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.orm import Session

from ..auth import Gateway

UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def ingest_caller(state, headers: Mapping[str, str]) -> Gateway:
    """Who posts, from the app's state and the request's headers; HTTPException 401 if nobody
    we know."""
    authorization = headers.get("authorization")
    if authorization is not None:
        name = state.ingest_credentials.bearer(authorization)
        if name is None:
            raise HTTPException(401, "the bearer token is not a gateway's ingest token", headers=UNAUTHORIZED)
        return Gateway(name)
    check = state.ingest_credentials.webhook(headers, tolerance_seconds=state.settings.webhook_tolerance_seconds)
    if check is None:
        raise HTTPException(
            401,
            "send Authorization: Bearer <ingest token>, or sign the post with Standard Webhooks headers",
            headers=UNAUTHORIZED,
        )
    if check.problem is not None:
        raise HTTPException(401, check.problem, headers=UNAUTHORIZED)
    return Gateway(None, check)


SESSION_COOKIE = "fastsse_session"  # the dashboard's sign-in (see Credentials.session)


async def read_caller(request: Request) -> str:
    """A team with a read token: in the Authorization header, or signed in to the dashboard."""
    credentials = request.app.state.read_credentials
    authorization = request.headers.get("authorization")
    name = (
        credentials.bearer(authorization)
        if authorization is not None
        else credentials.session(request.cookies.get(SESSION_COOKIE))
    )
    if name is None:
        raise HTTPException(401, "send Authorization: Bearer <read token>, or sign in at /signin", headers=UNAUTHORIZED)
    return name


def invalid_parameter(name: str, value: str, reason: str) -> RequestValidationError:
    """A 422 shaped like FastAPI's own, so clients read every bad-parameter answer one way."""
    return RequestValidationError([{"type": "value_error", "loc": ("query", name), "msg": reason, "input": value}])


ReadCaller = Annotated[str, Depends(read_caller)]
