"""The database: engine set-up per backend, and applying the Alembic migrations."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.orm import Session, sessionmaker

from .resources import resource_dir


def migrations_dir() -> Path:
    return resource_dir("migrations")


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path | None:
    """The file of an SQLite URL (None for another backend or an in-memory database)."""
    if not is_sqlite(url):
        return None
    database = make_url(url).database
    return None if not database or database == ":memory:" else Path(database).resolve()


# How long an SQLite statement waits for another connection's write lock.
SQLITE_BUSY_TIMEOUT_MS = 30_000


def make_engine(url: str) -> Engine:
    if is_sqlite(url):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _durable_sqlite(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            # WAL lets readers run beside the writer; synchronous=FULL makes every COMMIT
            # durable before it returns, which is what a 2xx promises.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.close()

        return engine
    return create_engine(
        url,
        pool_pre_ping=True,  # a restarted server leaves dead pooled connections behind
        pool_size=8,
        max_overflow=4,
        pool_timeout=5,
        connect_args=POSTGRES_CONNECT_ARGS,
    )


# How every PostgreSQL connection is made (the engine's, and the writer's own).
POSTGRES_CONNECT_ARGS = {
    "connect_timeout": 3,
    # A 2xx means the verdict is on disk: never trust a server-wide default.
    "options": "-c synchronous_commit=on",
    # No statement is prepared (the writer's connection prepares its one): a read prepared on
    # the fly soon runs a generic plan, which cannot see that "the last hour" is a small part
    # of the rollups, and scans them all.
    "prepare_threshold": None,
}


def postgres_connect_args(engine: Engine) -> dict:
    """What psycopg.connect() needs to connect as the engine does."""
    _, params = engine.dialect.create_connect_args(engine.url)
    params.pop("context", None)  # SQLAlchemy's own adapters
    return {**params, **POSTGRES_CONNECT_ARGS}


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(url: str) -> None:
    """Bring the schema to the newest migration (the only way tables are made)."""
    command.upgrade(alembic_config(url), "head")


def ping(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    """The same moment in UTC, the zone every stored time is in.

    A time without a zone is taken as UTC: SQLite hands stored times back that way.
    """
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)
