"""intent expiry index

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-05

An index on ``intent (status, expires_at)``: the scheduler's minutely expiry scan reads
only the rows past their expiry instead of every active intent.
"""
from typing import Sequence, Union

from alembic import op


revision: str = '0003'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_index('ix_intent_expiry', 'intent', ['status', 'expires_at'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ix_intent_expiry', table_name='intent')
