"""run tool session: what a run's agent got from goalsui's tool server

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05

Adds ``intent_run.tool_session`` (JSON): when the run's agent opened its goalsui tool
session and which tools it was offered. A run whose runner speaks MCP but whose agent
never listed its tools ends ``failed`` with reason ``no-tools``.
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0004'
down_revision: Union[str, Sequence[str], None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('intent_run') as batch:
        batch.add_column(sa.Column('tool_session', sa.JSON(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('intent_run') as batch:
        batch.drop_column('tool_session')
