"""ended_at (when the stream ended, as the gateway says), and retry chains: each attempt's
previous attempt, and per-minute counts of first failures, retries and recoveries

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

RETRY_COUNTS = ("requests", "first_failures", "retries", "recoveries", "retries_of_final")


def upgrade() -> None:
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("previous_category", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("previous_retryable", sa.Boolean(), nullable=True))
    op.execute("UPDATE verdicts SET ended_at = received_at")
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.alter_column("ended_at", existing_type=sa.DateTime(timezone=True), nullable=False)
        batch_op.drop_index("ix_verdicts_received_at")
        batch_op.create_index("ix_verdicts_ended_at", ["ended_at"], unique=False)
        batch_op.create_index(
            "ix_verdicts_request_chain",
            ["gateway", "request_id", "id"],
            unique=False,
            postgresql_where=sa.text("request_id IS NOT NULL"),
            sqlite_where=sa.text("request_id IS NOT NULL"),
        )
    with op.batch_alter_table("verdict_rollups", schema=None) as batch_op:
        for name in RETRY_COUNTS:
            batch_op.add_column(sa.Column(name, sa.BigInteger(), nullable=False, server_default="0"))
    with op.batch_alter_table("verdict_rollups", schema=None) as batch_op:
        for name in RETRY_COUNTS:
            batch_op.alter_column(name, server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("verdict_rollups", schema=None) as batch_op:
        for name in RETRY_COUNTS:
            batch_op.drop_column(name)
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.drop_index("ix_verdicts_request_chain")
        batch_op.drop_index("ix_verdicts_ended_at")
        batch_op.create_index("ix_verdicts_received_at", ["received_at"], unique=False)
        batch_op.drop_column("previous_retryable")
        batch_op.drop_column("previous_category")
        batch_op.drop_column("ended_at")
