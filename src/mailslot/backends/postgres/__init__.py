"""The PostgreSQL store, for agents on several machines (docs/postgres.md)."""
