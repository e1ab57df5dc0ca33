"""agents: run transcripts, tool calls, usage, process groups, review, journal run ids

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03

Adds to ``intent_run`` where its runner's process group lives (``host``, ``pgid``),
``needs_review``, the usage an agent reported (``tokens_in``, ``tokens_out``,
``cost_usd``, ``model``) and the transcript's ``prompt`` and ``argv``; to ``intent``
its ``on_interrupt`` policy; to ``journal`` the ``run_id`` and ``tool`` of a tool
server write; and the ``tool_call`` table.
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('tool_call',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('arguments', sa.JSON(), nullable=True),
    sa.Column('result', sa.Text(), nullable=True),
    sa.Column('is_error', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_tool_call_run_id'), 'tool_call', ['run_id'], unique=False)
    with op.batch_alter_table('intent_run') as batch:
        batch.add_column(sa.Column('host', sa.String(), nullable=True))
        batch.add_column(sa.Column('pgid', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('needs_review', sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column('tokens_in', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('tokens_out', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('cost_usd', sa.Float(), nullable=True))
        batch.add_column(sa.Column('model', sa.String(), nullable=True))
        batch.add_column(sa.Column('prompt', sa.Text(), nullable=True))
        batch.add_column(sa.Column('argv', sa.JSON(), nullable=True))
    with op.batch_alter_table('intent') as batch:
        batch.add_column(sa.Column('on_interrupt', sa.String(), nullable=True))
    with op.batch_alter_table('journal') as batch:
        batch.add_column(sa.Column('run_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('tool', sa.String(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('journal') as batch:
        batch.drop_column('tool')
        batch.drop_column('run_id')
    with op.batch_alter_table('intent') as batch:
        batch.drop_column('on_interrupt')
    with op.batch_alter_table('intent_run') as batch:
        for name in ('argv', 'prompt', 'model', 'cost_usd', 'tokens_out', 'tokens_in',
                     'needs_review', 'pgid', 'host'):
            batch.drop_column(name)
    op.drop_index(op.f('ix_tool_call_run_id'), table_name='tool_call')
    op.drop_table('tool_call')
