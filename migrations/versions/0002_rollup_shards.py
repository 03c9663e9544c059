"""rollups per writer shard, so that concurrent writers never wait for each other's row locks

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

KEY = ["minute", "gateway", "tool", "protocol", "category"]


def upgrade() -> None:
    with op.batch_alter_table("verdict_rollups", schema=None) as batch_op:
        batch_op.add_column(sa.Column("shard", sa.Integer(), nullable=False, server_default="0"))
        batch_op.drop_constraint("pk_verdict_rollups", type_="primary")
        batch_op.create_primary_key("pk_verdict_rollups", KEY + ["shard"])
    with op.batch_alter_table("verdict_rollups", schema=None) as batch_op:
        batch_op.alter_column("shard", server_default=None)


def downgrade() -> None:
    # Rows of several shards of one bucket become one row again.
    op.execute(
        "CREATE TABLE verdict_rollups_merged AS SELECT minute, gateway, tool, protocol, "
        "category, SUM(verdicts) AS verdicts, SUM(silent) AS silent, "
        "SUM(model_fallbacks) AS model_fallbacks, SUM(bytes) AS bytes FROM verdict_rollups "
        "GROUP BY minute, gateway, tool, protocol, category"
    )
    op.execute("DELETE FROM verdict_rollups")
    with op.batch_alter_table("verdict_rollups", schema=None) as batch_op:
        batch_op.drop_constraint("pk_verdict_rollups", type_="primary")
        batch_op.drop_column("shard")
        batch_op.create_primary_key("pk_verdict_rollups", KEY)
    op.execute(
        "INSERT INTO verdict_rollups (minute, gateway, tool, protocol, category, verdicts, "
        "silent, model_fallbacks, bytes) SELECT minute, gateway, tool, protocol, category, "
        "verdicts, silent, model_fallbacks, bytes FROM verdict_rollups_merged"
    )
    op.drop_table("verdict_rollups_merged")
