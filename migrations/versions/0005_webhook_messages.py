"""webhook_messages: the id of each signed post while its signature's time is in the window, so
that a captured signed post cannot be stored again under another stream (both backends)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_messages",
        sa.Column("gateway", sa.String(length=64), nullable=False),
        sa.Column("webhook_id", sa.String(length=256), nullable=False),
        sa.Column("stream_id", sa.String(length=128), nullable=False),
        sa.Column("body_sha256", sa.String(length=64), nullable=False),
        sa.Column("webhook_timestamp", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("gateway", "webhook_id", name=op.f("pk_webhook_messages")),
    )
    op.create_index(
        op.f("ix_webhook_messages_webhook_timestamp"), "webhook_messages", ["webhook_timestamp"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_webhook_messages_webhook_timestamp"), table_name="webhook_messages")
    op.drop_table("webhook_messages")
