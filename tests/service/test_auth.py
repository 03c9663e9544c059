"""Credentials: bearer tokens per gateway and per team, and dashboard sessions (signed posts:
test_signing.py)."""

from __future__ import annotations

import httpx
import pytest

from fastsse_service.auth import ConfigError, Credentials, parse_tokens
from loadtests.wire import short_stream

from .conftest import INGEST, INGEST_SECRET, READ, READ_SECRET
from .test_ingest import stored_rows


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic aW5nZXN0LXNlY3JldC1ndzE="},
        READ,  # a read token does not grant ingest
    ],
)
def test_ingest_without_a_gateway_secret_is_401_and_stores_nothing(client, database_url, headers):
    response = client.post("/v1/streams", params={"stream_id": "s"}, content=short_stream(), headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert stored_rows(database_url) == []


def test_credentials_are_checked_before_parameters(client):
    response = client.post("/v1/streams", params={"stream_id": "bad id"}, content=b"")
    assert response.status_code == 401


def test_gateway_comes_from_the_credential_not_a_parameter(client):
    verdict = client.post(
        "/v1/streams", params={"stream_id": "s", "gateway": "signer"}, content=short_stream(), headers=INGEST
    ).json()
    assert verdict["gateway"] == "gw1"


@pytest.mark.parametrize("path", ["/v1/verdicts", "/v1/rates"])
def test_reads_need_a_read_token(client, path):
    assert client.get(path).status_code == 401
    assert client.get(path, headers=INGEST).status_code == 401  # an ingest token cannot read
    assert client.get(path, headers=READ).status_code == 200


def test_token_lists_parse_and_refuse_junk_without_echoing_secrets(tmp_path):
    file = tmp_path / "tokens"
    file.write_text("# gateways\ngw2:two\n\n")
    assert parse_tokens("gw1:one:with:colons", file, setting="INGEST_TOKENS") == {
        "gw1": "one:with:colons",
        "gw2": "two",
    }
    for bad in ("nosecret", "bad name:s", "gw:", "gw:a,gw:b"):
        with pytest.raises(ConfigError) as caught:
            parse_tokens(bad, None, setting="INGEST_TOKENS")
        assert "s3cr3t" not in str(caught.value)
    with pytest.raises(ConfigError, match="cannot be read"):
        parse_tokens("", tmp_path / "absent", setting="READ_TOKENS")


def test_bearer_matches_exactly():
    credentials = Credentials({"a": "secret-a", "b": "secret-b"})
    assert credentials.bearer("Bearer secret-b") == "b"
    assert credentials.bearer("bearer secret-a") == "a"
    assert credentials.bearer("Bearer secret-") is None
    assert credentials.bearer("Bearer secret-a2") is None
    assert credentials.bearer(None) is None


def test_a_dashboard_session_is_signed_and_ends():
    from fastsse_service.auth import Credentials

    team = Credentials({"team": "s3cret", "other.team": "another"})
    cookie = team.session_cookie("team", seconds=60, now=1_000)
    session = team.session(cookie, now=1_030)
    assert (session.team, session.expires) == ("team", 1_060) and len(session.session_id) == 32
    assert "s3cret" not in cookie
    assert team.session(cookie, now=1_061) is None  # expired
    name, expires, session_id, mac = cookie.split(".")
    assert team.session(f"other.team.{expires}.{session_id}.{mac}", now=1_030) is None  # another name
    assert team.session(f"{name}.{int(expires) + 3600}.{session_id}.{mac}", now=1_030) is None  # longer
    assert team.session(f"{name}.{expires}.{'0' * 32}.{mac}", now=1_030) is None  # another session
    assert team.session(cookie[:-2] + "AA", now=1_030) is None
    assert team.session("garbage", now=1_030) is None and team.session(None) is None
    assert team.session(f"{name}.{expires}.{mac}", now=1_030) is None  # the old form, without an id
    dotted = team.session_cookie("other.team", seconds=60, now=1_000)
    assert team.session(dotted, now=1_030).team == "other.team"
    assert team.session_cookie("team", seconds=60) != team.session_cookie("team", seconds=60)
    # a new secret ends the sessions made with the old one
    assert Credentials({"team": "rotated"}).session(cookie, now=1_030) is None


def test_signing_in_and_out_over_http(client):
    redirect = client.get("/?window=7d", follow_redirects=False)
    assert redirect.status_code == 303
    assert redirect.headers["location"] == "/signin?next=/%3Fwindow%3D7d"
    wrong = client.post("/signin", content=b"token=nope&next=/", follow_redirects=False)
    assert wrong.status_code == 401 and "not known" in wrong.text
    ingest = client.post("/signin", content=f"token={INGEST_SECRET}".encode(), follow_redirects=False)
    assert ingest.status_code == 401 and "ingest token" in ingest.text
    evil = client.post("/signin", content=f"token={READ_SECRET}&next=//evil.example/".encode(), follow_redirects=False)
    assert evil.status_code == 303 and evil.headers["location"] == "/"
    assert "httponly" in evil.headers["set-cookie"].lower()
    assert "samesite=strict" in evil.headers["set-cookie"].lower()
    page = client.get("/")
    assert page.status_code == 200 and "signed in as" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/v1/rates").status_code == 200  # the cookie reads the API
    client.post("/signout")
    assert client.get("/v1/rates").status_code == 401


def test_a_signed_out_cookie_is_refused_everywhere_even_if_kept(serve):
    """Issue 25: sign-out only asked the browser to forget the cookie, which stayed valid for
    its whole lifetime.  Now the session ends in the database: a copy of the cookie, sent to
    another instance of the service on the same database, is refused."""
    one, two = serve(), serve()
    with httpx.Client(base_url=one.url, timeout=30) as browser:
        browser.post("/signin", content=f"token={READ_SECRET}".encode())
        cookie = browser.cookies["fastsse_session"]
        other_session = httpx.Client(base_url=one.url, timeout=30)
        other_session.post("/signin", content=f"token={READ_SECRET}".encode())
        copied = {"fastsse_session": cookie}
        assert httpx.get(f"{two.url}/v1/rates", cookies=copied).status_code == 200
        assert browser.post("/signout", follow_redirects=False).status_code == 303
    assert httpx.get(f"{two.url}/v1/rates", cookies=copied).status_code == 401
    assert httpx.get(f"{one.url}/", cookies=copied, follow_redirects=False).status_code == 303  # to /signin
    # the team's other session goes on
    assert other_session.get("/v1/rates").status_code == 200
    other_session.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://sub.evil.example"},
        # Origins that urlsplit cannot read (each was a 500 with a traceback)
        {"Origin": "http://[::1"},
        {"Origin": "http://["},
        {"Origin": "https://]x["},
        {"Origin": "http://[vX]"},
    ],
)
def test_a_form_post_from_another_site_neither_signs_in_nor_out(client, server, headers):
    form = f"token={READ_SECRET}".encode()
    forced = client.post("/signin", content=form, headers=headers, follow_redirects=False)
    assert forced.status_code == 403 and "another site" in forced.text
    assert "set-cookie" not in forced.headers  # no session planted (login CSRF)
    own = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    assert client.post("/signin", content=form, headers=own, follow_redirects=False).status_code == 303
    assert client.post("/signout", headers=headers, follow_redirects=False).status_code == 403
    assert client.get("/v1/rates").status_code == 200  # still signed in
    assert client.post("/signout", headers=own, follow_redirects=False).status_code == 303


def test_the_service_serves_no_api_page_that_loads_another_origins_scripts(client):
    for path in ("/docs", "/redoc"):
        assert client.get(path).status_code == 404
    assert client.get("/openapi.json").json()["info"]["title"] == "fastsse ingestion service"
