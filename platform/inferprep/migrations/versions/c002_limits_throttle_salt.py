"""atomic submission limits (a gate row), sign-in throttling, each grading's salt

Revision ID: c002
Revises: c001
Create Date: 2026-12-02 10:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel  # noqa: F401 - column types

revision: str = 'c002'
down_revision: Union[str, Sequence[str], None] = 'c001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    # the grading's salt, for replaying it (server-side only)
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.add_column(sa.Column('salt', sa.BigInteger(), nullable=True))
    # the lock row that serializes admissions under the limits (queue.take_gate)
    gate = op.create_table('submissiongate',
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('taken', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )
    op.bulk_insert(gate, [{'name': 'submissions', 'taken': 0}])
    # failed sign-ins per account and per client address
    op.create_table('signinthrottle',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('window_start', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('signinthrottle', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_signinthrottle_window_start'), ['window_start'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('signinthrottle', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_signinthrottle_window_start'))
    op.drop_table('signinthrottle')
    op.drop_table('submissiongate')
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.drop_column('salt')
