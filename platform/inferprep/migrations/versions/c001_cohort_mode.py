"""cohort mode: sign-in sessions, cohort policy, assignments, instructor accounts

Revision ID: c001
Revises: 0001
Create Date: 2026-11-29 15:40:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel  # noqa: F401 - column types

revision: str = 'c001'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('is_instructor', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table('authsession',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('authsession', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_authsession_user_id'), ['user_id'], unique=False)
    op.create_table('cohortpolicy',
    sa.Column('cohort_id', sa.Integer(), nullable=False),
    sa.Column('unlock', sa.String(length=20), nullable=False),
    sa.Column('submissions_per_hour', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['cohort_id'], ['cohort.id'], ),
    sa.PrimaryKeyConstraint('cohort_id')
    )
    op.create_table('assignment',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('cohort_id', sa.Integer(), nullable=False),
    sa.Column('slug', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('deadline', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['cohort_id'], ['cohort.id'], ),
    sa.ForeignKeyConstraint(['slug'], ['exercise.slug'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('cohort_id', 'slug')
    )
    with op.batch_alter_table('assignment', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_assignment_cohort_id'), ['cohort_id'], unique=False)
    # the rate limit counts one user's recent submissions
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.create_index('ix_submission_user_created', ['user_id', 'created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.drop_index('ix_submission_user_created')
    with op.batch_alter_table('assignment', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_assignment_cohort_id'))
    op.drop_table('assignment')
    op.drop_table('cohortpolicy')
    with op.batch_alter_table('authsession', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_authsession_user_id'))
    op.drop_table('authsession')
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('is_instructor')
