"""PostgreSQL: verdicts range-partitioned by ended_at, in day partitions the service makes
ahead of time (service/partitions.py); the idempotency key (gateway, stream_id) in a table of
its own, verdict_keys, since a partitioned table's unique keys must hold ended_at.  SQLite: no
change, its verdicts table stays one plain table.

Every day that holds rows gets its partition here, before the rows are copied, so that the
default partition starts empty (the service makes the days ahead).  On a large table, run it
(``fastsse-service migrate``) while ingest is stopped: it copies every row.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The indexes every partition gets (they are made on the parent, so partitions inherit them).
INDEXES = (
    "CREATE INDEX ix_verdicts_ended_at ON verdicts (ended_at)",
    "CREATE INDEX ix_verdicts_tool_protocol_id ON verdicts (tool, protocol, id)",
    "CREATE INDEX ix_verdicts_request_chain ON verdicts (gateway, request_id, id) WHERE request_id IS NOT NULL",
)
OLD_NAMES = (
    "pk_verdicts",
    "uq_verdicts_gateway_stream_id",
    "ix_verdicts_ended_at",
    "ix_verdicts_tool_protocol_id",
    "ix_verdicts_request_chain",
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE verdicts RENAME TO verdicts_plain")
    for name in OLD_NAMES:
        op.execute(f"ALTER INDEX {name} RENAME TO {name}_plain")
    op.execute("ALTER SEQUENCE verdicts_id_seq OWNED BY NONE")  # it outlives verdicts_plain
    op.execute("CREATE TABLE verdicts (LIKE verdicts_plain INCLUDING DEFAULTS) PARTITION BY RANGE (ended_at)")
    op.execute("ALTER SEQUENCE verdicts_id_seq OWNED BY verdicts.id")
    op.execute("ALTER TABLE verdicts ADD CONSTRAINT pk_verdicts PRIMARY KEY (id, ended_at)")
    # Where a retried post finds its stored verdict (the key itself is unique in verdict_keys).
    op.execute("CREATE INDEX ix_verdicts_gateway_stream_id ON verdicts (gateway, stream_id)")
    for statement in INDEXES:
        op.execute(statement)
    op.execute("CREATE TABLE verdicts_default PARTITION OF verdicts DEFAULT")
    # One partition per UTC day with rows, named as service/partitions.py names them.
    days = (
        op.get_bind()
        .execute(sa.text("SELECT DISTINCT (ended_at AT TIME ZONE 'UTC')::date FROM verdicts_plain"))
        .scalars()
    )
    for day in days:
        low, high = day.isoformat(), (day + timedelta(days=1)).isoformat()
        op.execute(
            f"CREATE TABLE verdicts_p{day:%Y%m%d} PARTITION OF verdicts "
            f"FOR VALUES FROM ('{low} 00:00:00+00') TO ('{high} 00:00:00+00')"
        )
    op.execute(
        "CREATE TABLE verdict_keys (gateway varchar(64) NOT NULL, "
        "stream_id varchar(128) NOT NULL, "
        "CONSTRAINT pk_verdict_keys PRIMARY KEY (gateway, stream_id))"
    )
    op.execute("INSERT INTO verdicts SELECT * FROM verdicts_plain")
    op.execute("INSERT INTO verdict_keys SELECT gateway, stream_id FROM verdicts_plain")
    op.execute("DROP TABLE verdicts_plain")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE verdicts RENAME TO verdicts_partitioned")
    for name in (
        "pk_verdicts",
        "ix_verdicts_gateway_stream_id",
        "ix_verdicts_ended_at",
        "ix_verdicts_tool_protocol_id",
        "ix_verdicts_request_chain",
    ):
        op.execute(f"ALTER INDEX {name} RENAME TO {name}_partitioned")
    op.execute("ALTER SEQUENCE verdicts_id_seq OWNED BY NONE")
    op.execute("CREATE TABLE verdicts (LIKE verdicts_partitioned INCLUDING DEFAULTS)")
    op.execute("ALTER SEQUENCE verdicts_id_seq OWNED BY verdicts.id")
    op.execute("INSERT INTO verdicts SELECT * FROM verdicts_partitioned")
    op.execute("ALTER TABLE verdicts ADD CONSTRAINT pk_verdicts PRIMARY KEY (id)")
    op.execute("ALTER TABLE verdicts ADD CONSTRAINT uq_verdicts_gateway_stream_id UNIQUE (gateway, stream_id)")
    for statement in INDEXES:
        op.execute(statement)
    op.execute("DROP TABLE verdicts_partitioned")  # and every partition with it
    op.execute("DROP TABLE verdict_keys")
