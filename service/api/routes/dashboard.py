"""The dashboard: the page at ``/``, its sign-in, and its assets.

The page is a template with a little JavaScript (``dashboard/static/dashboard.js``) that reads
the same documented API anyone can call (``/v1/rates``, ``/v1/series``, ``/v1/retries``,
``/v1/verdicts``, ``/v1/requests``), so that the page, scripts and Grafana never disagree.
Signing in takes a read token once and keeps a signed session in an HttpOnly cookie; the
read API accepts that cookie as it accepts the token.
"""

from __future__ import annotations

from html import escape
from string import Template
from urllib.parse import parse_qs, quote, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

import fastsse

from ... import sessions
from ...queries import FOLDED
from ...resources import resource_dir
from ...uploads import UploadTooLarge, UploadTooSlow, read_body
from ..deps import SESSION_COOKIE, session_team

router = APIRouter(tags=["dashboard"], include_in_schema=False)

DASHBOARD = resource_dir("dashboard")
# A sign-in form holds a token and a path: larger is refused (413) before or while it is read.
MAX_FORM_BYTES = 4096
# Everything the page loads comes from the service itself.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _template(name: str) -> Template:
    return Template((DASHBOARD / "templates" / name).read_text())


def _page(name: str, status: int = 200, **values: str) -> HTMLResponse:
    text = _template(name).substitute(
        {key: escape(value) for key, value in values.items()}, version=escape(fastsse.__version__)
    )
    return HTMLResponse(text, status_code=status, headers=PAGE_HEADERS)


async def _signed_in(request: Request) -> str | None:
    """The team whose session the request's cookie is, unless a sign-out ended it."""
    return await session_team(request.app.state, request.cookies.get(SESSION_COOKIE))


def _local(next_path: str | None) -> str:
    """Where to go after signing in: a path of this service, never another site."""
    if not next_path or not next_path.startswith("/") or next_path.startswith("//"):
        return "/"
    return next_path


@router.get("/", response_class=HTMLResponse)
async def dashboard(request: Request) -> Response:
    team = await _signed_in(request)
    if team is None:
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/signin?next={quote(here)}", status_code=303)
    return _page("index.html", team=team, protocols=" ".join(fastsse.PROTOCOLS), folded=FOLDED)


@router.get("/signin", response_class=HTMLResponse)
async def signin_form(request: Request, next: str = "/") -> Response:
    return _page("signin.html", message="", next=_local(next), message_class="hidden")


def _cross_site(request: Request) -> bool:
    """A form post another site's page made (login CSRF, forced sign-out): the browser says so
    in Sec-Fetch-Site, or in an Origin that is not this service's host.  A client that sends
    neither (curl, a script) is not a browser another site can drive."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    origin = request.headers.get("origin")
    if origin is None:
        return False
    try:
        host = urlsplit(origin).netloc
    except ValueError:  # a bracketed host that is no IP address ("http://[::1"): no page's origin
        return True
    return origin == "null" or host.lower() != request.headers.get("host", "").lower()


CROSS_SITE = {"detail": "a form post from another site is refused: sign in from this service's own page"}


@router.post("/signin", response_class=HTMLResponse)
async def signin(request: Request) -> Response:
    if _cross_site(request):
        return JSONResponse(CROSS_SITE, status_code=403)
    settings = request.app.state.settings
    try:
        # A form of a few bytes gets a few seconds, not a post's minutes: slow forms from a few
        # addresses held every connection a replica takes behind the shipped HAProxy.
        body = await read_body(
            request.stream(),
            limit=MAX_FORM_BYTES,
            idle=min(settings.upload_idle_timeout_seconds, settings.signin_timeout_seconds),
            total=settings.signin_timeout_seconds,
            declared_length=request.headers.get("content-length"),
            total_setting="SIGNIN_TIMEOUT_SECONDS",
        )
    except UploadTooLarge:
        detail = f"a sign-in form is at most {MAX_FORM_BYTES} bytes"
        return JSONResponse({"detail": detail}, status_code=413, headers={"Connection": "close"})
    except UploadTooSlow as slow:
        detail = f"the sign-in form was too slow: {slow}"
        return JSONResponse({"detail": detail}, status_code=408, headers={"Connection": "close"})
    except ClientDisconnect:
        return Response(status_code=400)  # nobody is there to read it
    form = parse_qs(body.decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    next_path = _local((form.get("next") or ["/"])[0])
    state = request.app.state
    client = request.client.host if request.client else None
    retry_after = state.failed_credentials.retry_after(client) if token else None
    if retry_after is not None:
        message = f"Too many tokens from here were wrong. Try again in {retry_after} s."
        page = _page("signin.html", status=429, message=message, next=next_path, message_class="problem")
        page.headers["Retry-After"] = str(retry_after)
        return page
    team = state.read_credentials.named(token) if token else None
    if team is None:
        if token:
            state.failed_credentials.failed(client, "signin")
        poster = None
        if token and state.ingest_credentials.named(token):
            poster = "a gateway's ingest token"
        elif token and state.report_credentials.named(token):
            poster = "a reporter's token (REPORT_TOKENS)"
        if poster is not None:
            message = (
                f"That is {poster}: it posts streams but cannot read them. Sign in with a read token (READ_TOKENS)."
            )
        elif token:
            message = "That read token is not known here. Check READ_TOKENS and try again."
        else:
            message = "Enter a read token."
        return _page("signin.html", status=401, message=message, next=next_path, message_class="problem")
    hours = state.settings.dashboard_session_hours
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        state.read_credentials.session_cookie(team, seconds=int(hours * 3600)),
        max_age=int(hours * 3600),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/signout")
async def signout(request: Request) -> Response:
    if _cross_site(request):
        return JSONResponse(CROSS_SITE, status_code=403)
    state = request.app.state
    session = state.read_credentials.session(request.cookies.get(SESSION_COOKIE))
    if session is not None:  # ended for every worker and replica, not only in this browser
        await run_in_threadpool(sessions.end, state.sessionmaker, session)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
