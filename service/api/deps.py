"""Dependencies the routes declare: a database session, and who is calling."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from .. import sessions
from ..auth import SIGNING_HEADERS, BadSignature, Gateway
from ..content_encoding import content_encoding_of

UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def ingest_caller(state, headers: Mapping[str, str], target: bytes, client: str | None) -> Gateway:
    """Who posts, from the app's state, the request's headers, its target (path and query, as
    sent: a signature covers them) and its client's address; HTTPException 401 if nobody we
    know, 429 if that address has failed too often (failed_credentials.py)."""
    authorization = headers.get("authorization")
    if authorization is not None:
        refuse_if_guessing(state, client)
        name = state.ingest_credentials.bearer(authorization)
        if name is not None:
            return Gateway(name)
        name = state.report_credentials.bearer(authorization)
        if name is not None:
            return Gateway(name, reporter=True)
        state.failed_credentials.failed(client, "ingest_token")
        raise HTTPException(
            401, "the bearer token is neither a gateway's ingest token nor a reporter's", headers=UNAUTHORIZED
        )
    if any(name in headers for name in SIGNING_HEADERS):
        refuse_if_guessing(state, client)
    try:
        signed = state.ingest_credentials.signed_post(
            headers,
            target,
            content_encoding=content_encoding_of(headers),
            tolerance_seconds=state.settings.webhook_tolerance_seconds,
        )
    except BadSignature as exc:
        state.failed_credentials.failed(client, "signature")
        raise HTTPException(401, str(exc), headers=UNAUTHORIZED) from None
    if signed is None:
        raise HTTPException(
            401,
            "send Authorization: Bearer <ingest token>, or sign the post (docs: gateways/signing.md)",
            headers=UNAUTHORIZED,
        )
    return Gateway(signed.signer, signed)


def refuse_if_guessing(state, client: str | None) -> None:
    """HTTPException 429 if this client address has no failed credentials left to spend."""
    retry_after = state.failed_credentials.retry_after(client)
    if retry_after is not None:
        raise HTTPException(
            429,
            "too many credentials from this address matched nothing: retry after Retry-After seconds",
            headers={"Retry-After": str(retry_after)},
        )


def request_target(scope) -> bytes:
    """The request's target as the client sent it: its path, and its query if it has one."""
    path = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string", b"")
    return path + b"?" + query if query else path


SESSION_COOKIE = "fastsse_session"  # the dashboard's sign-in (see Credentials.session)


async def read_caller(request: Request) -> str:
    """A team with a read token: in the Authorization header, or signed in to the dashboard."""
    state = request.app.state
    authorization = request.headers.get("authorization")
    if authorization is not None:
        client = request.client.host if request.client else None
        refuse_if_guessing(state, client)
        name = state.read_credentials.bearer(authorization)
        if name is None:
            state.failed_credentials.failed(client, "read_token")
    else:
        name = await session_team(state, request.cookies.get(SESSION_COOKIE))
    if name is None:
        raise HTTPException(401, "send Authorization: Bearer <read token>, or sign in at /signin", headers=UNAUTHORIZED)
    return name


async def session_team(state, cookie: str | None) -> str | None:
    """The team of a dashboard session cookie, if it is genuine, not expired, and not ended by
    a sign-out (which the database says: only signed-in requests ask it)."""
    session = state.read_credentials.session(cookie)
    if session is None or await run_in_threadpool(sessions.is_ended, state.sessionmaker, session):
        return None
    return session.team


def invalid_parameter(name: str, value: str, reason: str) -> RequestValidationError:
    """A 422 shaped like FastAPI's own, so clients read every bad-parameter answer one way."""
    return RequestValidationError([{"type": "value_error", "loc": ("query", name), "msg": reason, "input": value}])


ReadCaller = Annotated[str, Depends(read_caller)]
