"""worker home threads

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-08

Adds ``goal_id`` and ``worker`` to ``thread``: set on a worker's home thread (the
thread its turns run in, created with the worker), NULL on every other thread. The
unique index finds a worker's home thread again and keeps it one per worker (NULLs
are distinct, so ordinary threads are not constrained).
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('thread') as batch:
        batch.add_column(sa.Column('goal_id', sa.String(), nullable=True))
        batch.add_column(sa.Column('worker', sa.String(), nullable=True))
    op.create_index('ux_thread_home', 'thread', ['goal_id', 'worker'], unique=True)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ux_thread_home', table_name='thread')
    with op.batch_alter_table('thread') as batch:
        batch.drop_column('worker')
        batch.drop_column('goal_id')
