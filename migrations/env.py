"""Alembic environment: the schema of service/models.py, on DATABASE_URL or the given url."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from fastsse_service.config import get_settings
from fastsse_service.db import is_sqlite, make_engine
from fastsse_service.models import Base, in_schema

config = context.config
if config.config_file_name is not None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)

url = config.get_main_option("sqlalchemy.url") or get_settings().database_url
DIALECT = "sqlite" if is_sqlite(url) else "postgresql"


def include_name(name, type_, parent_names) -> bool:
    return in_schema(DIALECT, name)


def include_object(obj, name, type_, reflected, compare_to) -> bool:
    return in_schema(DIALECT, name)


def run_migrations_offline() -> None:
    context.configure(
        url=url,
        target_metadata=Base.metadata,
        literal_binds=True,
        render_as_batch=is_sqlite(url),
        include_name=include_name,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=is_sqlite(url),
            compare_type=True,
            include_name=include_name,
            include_object=include_object,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
