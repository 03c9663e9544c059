"""verdicts and per-minute rollups

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "verdict_rollups",
        sa.Column("minute", sa.DateTime(timezone=True), nullable=False),
        sa.Column("gateway", sa.String(length=64), nullable=False),
        sa.Column("tool", sa.String(length=64), nullable=False),
        sa.Column("protocol", sa.String(length=16), nullable=False),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("verdicts", sa.BigInteger(), nullable=False),
        sa.Column("silent", sa.BigInteger(), nullable=False),
        sa.Column("model_fallbacks", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("minute", "gateway", "tool", "protocol", "category", name=op.f("pk_verdict_rollups")),
    )
    op.create_table(
        "verdicts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("gateway", sa.String(length=64), nullable=False),
        sa.Column("stream_id", sa.String(length=128), nullable=False),
        sa.Column("body_sha256", sa.String(length=64), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tool", sa.String(length=64), nullable=False),
        sa.Column("protocol", sa.String(length=16), nullable=False),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("silent", sa.Boolean(), nullable=False),
        sa.Column("retryable", sa.Boolean(), nullable=False),
        sa.Column("transport", sa.String(length=16), nullable=False),
        sa.Column("upstream_status", sa.SmallInteger(), nullable=True),
        sa.Column("finish_reason", sa.String(length=32), nullable=True),
        sa.Column("finish_reason_raw", sa.String(length=64), nullable=True),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("limit_kind", sa.String(length=16), nullable=True),
        sa.Column("message", sa.String(length=200), nullable=False),
        sa.Column("end_marker_seen", sa.Boolean(), nullable=False),
        sa.Column("finish_reason_seen", sa.Boolean(), nullable=False),
        sa.Column("residual_bytes", sa.BigInteger(), nullable=False),
        sa.Column("events", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("comments", sa.BigInteger(), nullable=False),
        sa.Column("malformed_events", sa.BigInteger(), nullable=False),
        sa.Column("text_events", sa.BigInteger(), nullable=False),
        sa.Column("reasoning_events", sa.BigInteger(), nullable=False),
        sa.Column("refusal_events", sa.BigInteger(), nullable=False),
        sa.Column("tool_calls", sa.Integer(), nullable=False),
        sa.Column("choices", sa.Integer(), nullable=False),
        sa.Column("model_requested", sa.String(length=128), nullable=True),
        sa.Column("model_served", sa.String(length=128), nullable=True),
        sa.Column("model_fallback", sa.Boolean(), nullable=False),
        sa.Column("request_id", sa.String(length=128), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_verdicts")),
        sa.UniqueConstraint("gateway", "stream_id", name=op.f("uq_verdicts_gateway_stream_id")),
    )
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_verdicts_received_at"), ["received_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_verdicts_tool_protocol_id"), ["tool", "protocol", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_verdicts_tool_protocol_id"))
        batch_op.drop_index(batch_op.f("ix_verdicts_received_at"))

    op.drop_table("verdicts")
    op.drop_table("verdict_rollups")
