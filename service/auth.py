"""Who is calling: gateways (ingest) and teams (reads), each with its own secret.

A gateway proves itself with ``Authorization: Bearer <secret>`` or, if it signs its posts, with
the headers of Standard Webhooks plus a Content-Digest: an HMAC-SHA256 over the post's id, time,
request target (path and query), Content-Encoding and the body's SHA-256, so that the signer is
known before the body is read and nothing that changes what the post means can be changed
(docs/gateways/signing.md).  The
identity always comes from the credential that matched, never from a parameter.  Secrets are
compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
WEBHOOK_SECRET_PREFIX = "whsec_"
# A secret shorter than this can be guessed: the service warns at start-up (it still runs).
MIN_SECRET_LENGTH = 16
# Unix seconds as a client may send them: ASCII digits only (str.isdigit() also takes "²",
# which int() refuses), and few enough that int() never refuses them as too long.
_UNIX_SECONDS = re.compile(r"[0-9]{1,12}")
# A signed post's id, kept (service/writer.py) to refuse its reuse by another post.
MESSAGE_ID = re.compile(r"[!-~]{1,256}")
# A signed post's headers (docs/gateways/signing.md).
SIGNING_HEADERS = ("webhook-id", "webhook-timestamp", "content-digest", "webhook-signature")
SIGNATURE_VERSION = "fastsse2"
# fastsse1 did not cover Content-Encoding: a captured compressed post sent again without it was
# judged as its compressed bytes (a forged silent failure).  Named in its refusal.
RETIRED_VERSION = "fastsse1"
_SESSION_ID = re.compile(r"[0-9a-f]{32}")


class ConfigError(ValueError):
    """A token list in the settings cannot be read."""


def parse_tokens(inline: str, file: Path | None, *, setting: str) -> dict[str, str]:
    """``"name:secret,name2:secret2"`` (and/or a file of ``name:secret`` lines) -> {name: secret}."""
    entries = [part for part in inline.split(",") if part.strip()]
    if file is not None:
        try:
            lines = file.read_text().splitlines()
        except OSError as exc:
            raise ConfigError(f"{setting}_FILE cannot be read: {exc.strerror}") from None
        entries += [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    tokens: dict[str, str] = {}
    for entry in entries:
        name, sep, secret = entry.strip().partition(":")
        if not sep or not _NAME.match(name) or not secret:
            # Never echo the entry: it holds a secret.
            raise ConfigError(
                f"{setting}: every entry must be name:secret with a name of "
                "letters, digits, '.', '_' or '-' (at most 64)"
            )
        if name in tokens:
            raise ConfigError(f"{setting}: the name {name!r} is given twice")
        tokens[name] = secret
    return tokens


def all_credentials(settings) -> tuple[Credentials, Credentials, Credentials]:
    """The ingest, report and read credentials of the settings.  A report name is a gateway's
    name too (its verdicts are stored under it), so it may not be an ingest name as well."""
    ingest = parse_tokens(settings.ingest_tokens, settings.ingest_tokens_file, setting="INGEST_TOKENS")
    report = parse_tokens(settings.report_tokens, settings.report_tokens_file, setting="REPORT_TOKENS")
    read = parse_tokens(settings.read_tokens, settings.read_tokens_file, setting="READ_TOKENS")
    both = sorted(ingest.keys() & report.keys())
    if both:
        raise ConfigError(f"REPORT_TOKENS: {', '.join(both)} is an INGEST_TOKENS name too; give it another")
    return Credentials(ingest), Credentials(report), Credentials(read)


class Credentials:
    """The secrets of one role (gateways that ingest, applications' reporters, or teams that
    read)."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self._secrets = [(name, secret.encode()) for name, secret in tokens.items()]

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __len__(self) -> int:
        return len(self._secrets)

    def names(self) -> list[str]:
        return [name for name, _secret in self._secrets]

    def short(self) -> list[str]:
        """The names whose secret is shorter than MIN_SECRET_LENGTH characters."""
        return [name for name, secret in self._secrets if len(secret) < MIN_SECRET_LENGTH]

    def bearer(self, authorization: str | None) -> str | None:
        """The name whose secret the header carries, or None."""
        if not authorization:
            return None
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() != "bearer" or not presented:
            return None
        return self.named(presented.strip())

    def named(self, presented: str) -> str | None:
        """The name whose secret this is, or None."""
        presented_bytes = presented.encode()
        match = None
        for name, secret in self._secrets:  # no early exit: every secret is compared
            if hmac.compare_digest(presented_bytes, secret) and match is None:
                match = name
        return match

    # A dashboard session: the cookie says who signed in, until when, and the session's own
    # id, signed with that name's own secret, so the secret never travels again, no other key
    # is needed across workers and replicas, and changing a secret ends its sessions.  Signing
    # out ends the session by its id in the database (service/sessions.py).
    def session_cookie(self, name: str, *, seconds: int, now: float | None = None) -> str:
        expires = int((time.time() if now is None else now) + seconds)
        session_id = secrets.token_hex(16)
        return f"{name}.{expires}.{session_id}.{self._session_mac(name, expires, session_id)}"

    def session(self, cookie: str | None, *, now: float | None = None) -> DashboardSession | None:
        """The session a cookie was made for, if it is genuine and not expired (whether it was
        ended by a sign-out, the database says)."""
        if not cookie or cookie.count(".") < 3:
            return None
        rest, _, mac = cookie.rpartition(".")
        rest, _, session_id = rest.rpartition(".")
        name, _, expires = rest.rpartition(".")
        if not _UNIX_SECONDS.fullmatch(expires) or int(expires) < (time.time() if now is None else now):
            return None
        if not _SESSION_ID.fullmatch(session_id):
            return None
        expected = self._session_mac(name, int(expires), session_id)
        if expected is None or not hmac.compare_digest(expected.encode(), mac.encode()):
            return None
        return DashboardSession(name, session_id, int(expires))

    def _session_mac(self, name: str, expires: int, session_id: str) -> str | None:
        secret = dict(self._secrets).get(name)
        if secret is None:
            return None
        digest = hmac.new(secret, f"session.{name}.{expires}.{session_id}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def signed_post(
        self, headers, target: bytes, *, content_encoding: str | None, tolerance_seconds: int
    ) -> SignedPost | None:
        """The gateway that signed this post's head, or None if it carries no signing headers.
        ``content_encoding``: the post's Content-Encoding (every line of it), or None.

        Raises BadSignature with the reason if the headers are there but do not hold."""
        values = [headers.get(name) for name in SIGNING_HEADERS]
        if all(value is None for value in values):
            return None
        msg_id, stamp, digest, signatures = values
        if not (msg_id and stamp and digest and signatures):
            raise BadSignature(f"{', '.join(SIGNING_HEADERS[:-1])} and {SIGNING_HEADERS[-1]} are all required")
        if not MESSAGE_ID.fullmatch(msg_id):
            raise BadSignature("webhook-id must be 1 to 256 visible ASCII characters")
        if not _UNIX_SECONDS.fullmatch(stamp) or abs(time.time() - int(stamp)) > tolerance_seconds:
            raise BadSignature("webhook-timestamp is outside the accepted window")
        body_sha256 = _sha256_of(digest)
        if body_sha256 is None:
            raise BadSignature("content-digest must be sha-256=:<base64 of the body's SHA-256>:")
        presented, retired = [], False
        for item in signatures.split():
            version, _, value = item.partition(",")
            retired = retired or version == RETIRED_VERSION
            if version == SIGNATURE_VERSION:
                try:
                    presented.append(base64.b64decode(value, validate=True))
                except (binascii.Error, ValueError):
                    continue
        if not presented:
            if retired:
                raise BadSignature(
                    f"webhook-signature holds a {RETIRED_VERSION} signature, which does not cover "
                    f"Content-Encoding: sign with {SIGNATURE_VERSION} (docs: gateways/signing.md)"
                )
            raise BadSignature(
                f"webhook-signature holds no {SIGNATURE_VERSION} signature (Standard Webhooks' v1 "
                "does not cover the request target): see the docs, gateways/signing.md"
            )
        content = signed_content(msg_id, int(stamp), target, signed_coding(content_encoding), body_sha256)
        match = None
        for name, secret in self._secrets:  # no early exit: every secret is tried
            expected = hmac.digest(_webhook_key(secret), content, "sha256")
            for signature in presented:
                if hmac.compare_digest(expected, signature) and match is None:
                    match = name
        if match is None:
            raise BadSignature("the webhook signature matches no gateway's secret")
        return SignedPost(match, msg_id, int(stamp), body_sha256.hex())


@dataclass(frozen=True, slots=True)
class DashboardSession:
    """A genuine session cookie: the team, the session's id, and when it expires (Unix s)."""

    team: str
    session_id: str
    expires: int


class BadSignature(ValueError):
    """Signing headers that do not prove a gateway's secret (the post is refused, 401)."""


@dataclass(frozen=True, slots=True)
class SignedPost:
    """A post whose head a gateway signed: the signature covers its id, time, request target
    and the body's SHA-256, which the body must then match."""

    signer: str
    message_id: str
    timestamp: int
    body_sha256: str  # hex, as the service computes it while it reads the body


def signed_content(msg_id: str, timestamp: int, target: bytes, coding: str, body_sha256: bytes) -> bytes:
    """What a fastsse2 signature is the HMAC-SHA256 of: six lines, no line break at the end.
    None of them can hold a line break, so no two posts share this text.  ``coding``: the
    post's Content-Encoding as ``signed_coding`` writes it (empty for none)."""
    return b"\n".join(
        (
            SIGNATURE_VERSION.encode(),
            msg_id.encode(),
            str(timestamp).encode(),
            target,
            coding.encode("latin-1"),
            base64.b64encode(body_sha256),
        )
    )


def signed_coding(content_encoding: str | None) -> str:
    """A Content-Encoding as a signature covers it: its codings lowercased, without spaces,
    comma-separated; identity left out (so no header, an empty one and identity sign alike, as
    the service reads them alike)."""
    codings = (coding.strip().lower() for coding in (content_encoding or "").split(","))
    return ",".join(coding for coding in codings if coding and coding != "identity")


def _sha256_of(content_digest: str) -> bytes | None:
    """The SHA-256 a Content-Digest header (RFC 9530) names, or None.  It may name other
    digests too, comma-separated: sha-256 is the one checked."""
    for member in content_digest.split(","):
        algorithm, _, value = member.strip().partition("=")
        if algorithm.strip().lower() != "sha-256":
            continue
        value = value.strip()
        if len(value) < 2 or value[0] != ":" or value[-1] != ":":
            return None
        try:
            digest = base64.b64decode(value[1:-1], validate=True)
        except (binascii.Error, ValueError):
            return None
        return digest if len(digest) == 32 else None
    return None


def _webhook_key(secret: bytes) -> bytes:
    # Standard Webhooks secrets look like whsec_<base64 key>; any other secret is used as is.
    # (A bare "whsec_" would be an empty key, which anyone could sign with: used as is.)
    if secret.startswith(WEBHOOK_SECRET_PREFIX.encode()):
        try:
            key = base64.b64decode(secret[len(WEBHOOK_SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if key:
            return key
    return secret


def sign_post(
    secret: str,
    target: str | bytes,
    body: bytes,
    *,
    content_encoding: str = "",
    msg_id: str | None = None,
    timestamp: int | None = None,
) -> dict[str, str]:
    """The headers a gateway sends with ``body`` (as sent: compressed, if it is) to ``target``
    (path and query, as sent) with this ``content_encoding`` header (empty: none), signed with
    its ``secret``: what ``fastsse-service sign`` prints, and what the tests send."""
    msg_id = msg_id or f"msg_{secrets.token_urlsafe(18)}"
    timestamp = int(time.time()) if timestamp is None else timestamp
    target_bytes = target if isinstance(target, bytes) else target.encode()
    digest = hashlib.sha256(body).digest()
    content = signed_content(msg_id, timestamp, target_bytes, signed_coding(content_encoding), digest)
    signature = hmac.digest(_webhook_key(secret.encode()), content, "sha256")
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "content-digest": f"sha-256=:{base64.b64encode(digest).decode()}:",
        "webhook-signature": f"{SIGNATURE_VERSION},{base64.b64encode(signature).decode()}",
    }


@dataclass(frozen=True, slots=True)
class Gateway:
    """The gateway that posts, known up front: by its bearer token, or by the signature of the
    post's head (``signed``: what the body must then match).  ``reporter``: an application's
    reporter (a REPORT_TOKENS credential), which may post its own answers only: their tool is
    its name, its streams a minute and its posts in progress are bounded."""

    name: str
    signed: SignedPost | None = None
    reporter: bool = False
