"""Who is calling: gateways (ingest) and teams (reads), each with its own secret.

A gateway proves itself with ``Authorization: Bearer <secret>`` or, if it signs its posts, with
Standard Webhooks headers (HMAC-SHA256 over id, timestamp and body).  The identity always comes
from the credential that matched, never from a parameter.  Secrets are compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
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


class Credentials:
    """The secrets of one role (gateways that ingest, or teams that read)."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self._secrets = [(name, secret.encode()) for name, secret in tokens.items()]

    def __bool__(self) -> bool:
        return bool(self._secrets)

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

    # A dashboard session: the cookie says who signed in and until when, signed with that
    # name's own secret, so the secret never travels again, no other key is needed across
    # workers and replicas, and changing a secret ends its sessions.
    def session_cookie(self, name: str, *, seconds: int, now: float | None = None) -> str:
        expires = int((time.time() if now is None else now) + seconds)
        return f"{name}.{expires}.{self._session_mac(name, expires)}"

    def session(self, cookie: str | None, *, now: float | None = None) -> str | None:
        """The name a session cookie was made for, if it is genuine and not expired."""
        if not cookie or cookie.count(".") < 2:
            return None
        rest, _, mac = cookie.rpartition(".")
        name, _, expires = rest.rpartition(".")
        if not _UNIX_SECONDS.fullmatch(expires) or int(expires) < (time.time() if now is None else now):
            return None
        expected = self._session_mac(name, int(expires))
        if expected is None or not hmac.compare_digest(expected.encode(), mac.encode()):
            return None
        return name

    def _session_mac(self, name: str, expires: int) -> str | None:
        secret = dict(self._secrets).get(name)
        if secret is None:
            return None
        digest = hmac.new(secret, f"session.{name}.{expires}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def webhook(self, headers, *, tolerance_seconds: int) -> WebhookCheck | None:
        """Start checking a Standard Webhooks signature, or None if the headers are absent."""
        msg_id = headers.get("webhook-id")
        stamp = headers.get("webhook-timestamp")
        signatures = headers.get("webhook-signature")
        if msg_id is None and stamp is None and signatures is None:
            return None
        return WebhookCheck(self._secrets, msg_id, stamp, signatures, tolerance_seconds)


class WebhookCheck:
    """A signature check that follows the body as it streams in, then names the signer."""

    def __init__(self, secrets, msg_id, stamp, signatures, tolerance_seconds) -> None:
        self.problem: str | None = None
        if not (msg_id and stamp and signatures):
            self.problem = "webhook-id, webhook-timestamp and webhook-signature are all required"
        elif not _UNIX_SECONDS.fullmatch(stamp) or abs(time.time() - int(stamp)) > tolerance_seconds:
            self.problem = "webhook-timestamp is outside the accepted window"
        self._presented = []
        for item in (signatures or "").split():
            version, _, value = item.partition(",")
            if version == "v1":
                try:
                    self._presented.append(base64.b64decode(value, validate=True))
                except (binascii.Error, ValueError):
                    continue
        prefix = f"{msg_id}.{stamp}.".encode()
        self._macs = []
        if self.problem is None:
            for name, secret in secrets:
                mac = hmac.new(_webhook_key(secret), prefix, hashlib.sha256)
                self._macs.append((name, mac))

    def update(self, chunk: bytes) -> None:
        for _, mac in self._macs:
            mac.update(chunk)

    def signer(self) -> str | None:
        match = None
        for name, mac in self._macs:
            expected = mac.digest()
            for presented in self._presented:
                if hmac.compare_digest(expected, presented) and match is None:
                    match = name
        return match


def _webhook_key(secret: bytes) -> bytes:
    # Standard Webhooks secrets look like whsec_<base64 key>; any other secret is used as is.
    if secret.startswith(WEBHOOK_SECRET_PREFIX.encode()):
        try:
            return base64.b64decode(secret[len(WEBHOOK_SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            pass
    return secret


def sign_webhook(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The webhook-signature header value a gateway sends (the tests sign their posts with it)."""
    key = _webhook_key(secret.encode())
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


@dataclass(frozen=True, slots=True)
class Gateway:
    """A gateway known by its bearer token, or one whose webhook signature is checked once the
    whole body has arrived (the signature covers the body)."""

    name: str | None
    webhook: WebhookCheck | None = None
