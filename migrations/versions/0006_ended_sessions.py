"""ended_sessions: dashboard sessions a sign-out ended, refused until their cookies would have
expired (both backends)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ended_sessions",
        sa.Column("session_id", sa.String(length=32), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_ended_sessions")),
    )
    op.create_index(op.f("ix_ended_sessions_expires_at"), "ended_sessions", ["expires_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_ended_sessions_expires_at"), table_name="ended_sessions")
    op.drop_table("ended_sessions")
