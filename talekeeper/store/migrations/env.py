"""Alembic environment: runs on the connection the app hands over (see store/db.py)."""

from alembic import context

from talekeeper.store.models import Base

connection = context.config.attributes.get("connection")
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite alters tables by copying them
)
with context.begin_transaction():
    context.run_migrations()
