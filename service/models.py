"""The stored tables.  Migrations in migrations/ create them; this module only describes them.

Nothing here holds payload: a verdict row is state and category, counts and identifiers.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .partitions import is_partition
from .verdict_fields import FIELDS

# SQLite only autoincrements an INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
RowId = BigInteger().with_variant(Integer(), "sqlite")

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


# One judged stream, as a gateway posted it: the row's id, then every field of a verdict
# (service/verdict_fields.py, the one list of them).
VERDICTS = Table(
    "verdicts",
    Base.metadata,
    Column("id", RowId, primary_key=True, autoincrement=True),
    *(Column(field.name, field.sql, nullable=field.nullable) for field in FIELDS),
    # stream_id is the gateway's idempotency key: the same id from two gateways is two
    # streams.  Unique here on SQLite; on PostgreSQL, unique in verdict_keys (VerdictKey),
    # with a plain index here to find the stored verdict of a key.
    UniqueConstraint("gateway", "stream_id"),
    Index("ix_verdicts_gateway_stream_id", "gateway", "stream_id"),
    Index(None, "ended_at"),
    Index(None, "tool", "protocol", "id"),
    # The attempts of one request, in the order they were stored (see previous_category).
    Index(
        "ix_verdicts_request_chain",
        "gateway",
        "request_id",
        "id",
        postgresql_where=text("request_id IS NOT NULL"),
        sqlite_where=text("request_id IS NOT NULL"),
    ),
)


class StoredVerdict(Base):
    """One judged stream, as a gateway posted it (the VERDICTS table, mapped)."""

    __table__ = VERDICTS


class VerdictKey(Base):
    """PostgreSQL only: the key of every stored verdict.  There, verdicts is range-partitioned
    by ended_at (service/partitions.py), and a partitioned table's unique keys must hold the
    partition key, so the one global unique key lives here.  Retention deletes a key with its
    row."""

    __tablename__ = "verdict_keys"

    gateway: Mapped[str] = mapped_column(String(64), primary_key=True)
    stream_id: Mapped[str] = mapped_column(String(128), primary_key=True)


class WebhookMessage(Base):
    """The id of each signed post (docs/gateways/signing.md), kept while its signature's time
    is inside WEBHOOK_TOLERANCE_SECONDS: no other post may be stored under the same id.  The
    writer keeps and lets go of these (service/writer.py)."""

    __tablename__ = "webhook_messages"

    gateway: Mapped[str] = mapped_column(String(64), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    # the post the id was kept for: the same id with these again is the gateway's retry
    stream_id: Mapped[str] = mapped_column(String(128))
    body_sha256: Mapped[str] = mapped_column(String(64))
    webhook_timestamp: Mapped[int] = mapped_column(BigInteger, index=True)  # Unix seconds, as signed


class EndedSession(Base):
    """A dashboard session a sign-out ended, kept until its cookie would have expired (service/
    sessions.py): the cookie is refused from then on, by every worker and replica."""

    __tablename__ = "ended_sessions"

    session_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)  # Unix seconds


# What one backend has and the other has not (migration 0004): Alembic's comparison of these
# models with a database (migrations/env.py) leaves the other backend's objects out, and the
# partitions of verdicts too (they are made by the service, not by migrations).  PostgreSQL's
# verdicts also has (id, ended_at) for its primary key, which Alembic does not compare.
ONLY_ON = {
    "postgresql": frozenset({"verdict_keys", "ix_verdicts_gateway_stream_id"}),
    "sqlite": frozenset({"uq_verdicts_gateway_stream_id"}),
}


def in_schema(dialect: str, name: str | None) -> bool:
    """Whether the object of this name belongs to this backend's schema."""
    if name is None:
        return True
    if is_partition(name):
        return False
    return all(name not in only for backend, only in ONLY_ON.items() if backend != dialect)


class VerdictRollup(Base):
    """Counts per minute and writer, kept up to date in the same transaction as the verdict rows.

    Rates read these: O(buckets) whatever the number of verdict rows, and they
    outlive the rows that retention deletes.
    """

    __tablename__ = "verdict_rollups"

    minute: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    gateway: Mapped[str] = mapped_column(String(64), primary_key=True)
    tool: Mapped[str] = mapped_column(String(64), primary_key=True)
    protocol: Mapped[str] = mapped_column(String(16), primary_key=True)
    category: Mapped[str] = mapped_column(String(32), primary_key=True)
    # Each writer (one per worker process) adds to rows of its own shard, so that two writers
    # never wait for each other's row locks; readers sum over the shards.
    shard: Mapped[int] = mapped_column(Integer, primary_key=True)
    verdicts: Mapped[int] = mapped_column(BigInteger)
    silent: Mapped[int] = mapped_column(BigInteger)
    model_fallbacks: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)
    # Retry chains (verdicts posted with a request_id), counted where each attempt falls:
    requests: Mapped[int] = mapped_column(BigInteger)  # first attempts
    first_failures: Mapped[int] = mapped_column(BigInteger)  # first attempts that failed
    retries: Mapped[int] = mapped_column(BigInteger)  # attempts after another
    recoveries: Mapped[int] = mapped_column(BigInteger)  # complete retries of a failed attempt
    # retries of a failure that was not retryable: the same request hits the same wall
    retries_of_final: Mapped[int] = mapped_column(BigInteger)
