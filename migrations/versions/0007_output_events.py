"""verdicts.output_events: output that is not text (audio, images, approval requests, tool
results), counted by fastsse since issue 26; rows stored before it hold 0

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # On PostgreSQL the partitioned parent passes the column to every day partition.
    op.add_column("verdicts", sa.Column("output_events", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    op.drop_column("verdicts", "output_events")
