"""Dependencies the routes declare: a database session, and who is calling."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.orm import Session

from ..auth import BadSignature, Gateway

UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def ingest_caller(state, headers: Mapping[str, str], target: bytes) -> Gateway:
    """Who posts, from the app's state, the request's headers and its target (path and query,
    as sent: a signature covers them); HTTPException 401 if nobody we know."""
    authorization = headers.get("authorization")
    if authorization is not None:
        name = state.ingest_credentials.bearer(authorization)
        if name is None:
            raise HTTPException(401, "the bearer token is not a gateway's ingest token", headers=UNAUTHORIZED)
        return Gateway(name)
    try:
        signed = state.ingest_credentials.signed_post(
            headers, target, tolerance_seconds=state.settings.webhook_tolerance_seconds
        )
    except BadSignature as exc:
        raise HTTPException(401, str(exc), headers=UNAUTHORIZED) from None
    if signed is None:
        raise HTTPException(
            401,
            "send Authorization: Bearer <ingest token>, or sign the post (docs: gateways/signing.md)",
            headers=UNAUTHORIZED,
        )
    return Gateway(signed.signer, signed)


def request_target(scope) -> bytes:
    """The request's target as the client sent it: its path, and its query if it has one."""
    path = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string", b"")
    return path + b"?" + query if query else path


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
