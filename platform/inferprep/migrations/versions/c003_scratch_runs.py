"""scratch runs: a submission row of kind "scratch" keeps its snippet

Revision ID: c003
Revises: c002
Create Date: 2027-01-10 10:00:00

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

revision: str = 'c003'
down_revision: Union[str, Sequence[str], None] = 'c002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.add_column(sa.Column('snippet', sa.Text(), nullable=True))


def downgrade() -> None:
    op.execute("DELETE FROM submission WHERE kind = 'scratch'")
    with op.batch_alter_table('submission', schema=None) as batch_op:
        batch_op.drop_column('snippet')
