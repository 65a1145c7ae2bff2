"""The PostgreSQL store's schema, as numbered migrations.

Each migration runs in its own transaction under one advisory lock, after reading the
version the database is at: running ``mailslot init`` twice, or from two machines at
once, applies each migration exactly once. A migration is never edited once released;
a change is a new one appended to :data:`MIGRATIONS`.
"""

from __future__ import annotations

from typing import Any

MIGRATIONS: tuple[str, ...] = (
    # 1: everything the file store keeps, one table per kind of thing.
    """
    CREATE TABLE mail (
        agent text NOT NULL,
        id text NOT NULL,
        state text NOT NULL CHECK (state IN ('unread', 'read', 'done')),
        data bytea NOT NULL,
        PRIMARY KEY (agent, id));
    CREATE TABLE archived_mail (
        box text NOT NULL, agent text NOT NULL, id text NOT NULL,
        state text NOT NULL, data bytea NOT NULL, PRIMARY KEY (box, id));
    CREATE TABLE quarantine (
        agent text NOT NULL, id text NOT NULL, data bytea NOT NULL,
        PRIMARY KEY (agent, id));
    CREATE TABLE broadcasts (id text PRIMARY KEY, live boolean NOT NULL, data bytea NOT NULL);
    CREATE TABLE seen (agent text NOT NULL, id text NOT NULL, PRIMARY KEY (agent, id));
    CREATE TABLE events (seq bigserial PRIMARY KEY, record text NOT NULL);
    CREATE TABLE config (one boolean PRIMARY KEY DEFAULT true CHECK (one), data text NOT NULL);
    CREATE TABLE presence (
        agent text NOT NULL, key text NOT NULL, record text NOT NULL,
        PRIMARY KEY (agent, key));
    CREATE TABLE wakes (
        agent text NOT NULL, id text NOT NULL, claim text NOT NULL DEFAULT '',
        attempt integer NOT NULL, not_before double precision NOT NULL,
        PRIMARY KEY (agent, id, claim));
    CREATE TABLE shown (
        agent text NOT NULL, session text NOT NULL, id text NOT NULL,
        touched timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (agent, session, id));
    CREATE TABLE waiters (
        agent text NOT NULL, session text NOT NULL, pid integer NOT NULL,
        touched timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (agent, session));
    CREATE TABLE claims (agent text PRIMARY KEY, path text NOT NULL);
    """,
    # 2 (issue 12): registered agents, one JSON record each (never the secret itself).
    """
    CREATE TABLE registry (name text PRIMARY KEY, record bytea NOT NULL);
    """,
)
LATEST = len(MIGRATIONS)
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('mailslot schema'))"


def schema_version(conn: Any) -> int | None:
    """The version the database is at; ``None`` when mailslot never ran there."""
    row = conn.execute("SELECT to_regclass('mailslot_schema') IS NOT NULL").fetchone()
    if not row[0]:
        return None
    row = conn.execute("SELECT coalesce(max(version), 0) FROM mailslot_schema").fetchone()
    return int(row[0])


def migrate(conn: Any) -> int:
    """Bring the schema to :data:`LATEST` (``conn`` in autocommit mode); return how
    many migrations were applied. Safe to run twice and from two machines at once."""
    applied = 0
    for number, sql in enumerate(MIGRATIONS, start=1):
        with conn.transaction():
            conn.execute(_LOCK)
            conn.execute("CREATE TABLE IF NOT EXISTS mailslot_schema (version integer "
                         "PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())")
            if (schema_version(conn) or 0) >= number:
                continue
            conn.execute(sql)
            conn.execute("INSERT INTO mailslot_schema (version) VALUES (%s)", (number,))
            applied += 1
    return applied
