"""The PostgreSQL store's per-session delivery state (what sessions were shown, hook
sessions, mail for one session, latest sessions, claims, waiters) and presence.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from ...core.errors import UnsafePath
from ...core.names import SESSION_KEY
from .pg_connection import CHANNEL, PgConnection, json_object, json_text


class PgSessions(PgConnection):
    """The :class:`~mailslot.store.roles.Sessions` and
    :class:`~mailslot.store.roles.Presence` roles on PostgreSQL."""

    # Per-session delivery state ----------------------------------------------------------
    def shown(self, agent: str, session: str) -> set[str]:
        return {r[0] for r in self._rows(f"cannot read {agent}'s session",
                                         "SELECT id FROM shown WHERE agent = %s AND "
                                         "session = %s", (agent, session))}

    def shown_at(self, agent: str, session: str) -> float | None:
        """By this machine's clock: the database says how long ago (its own clock), so
        a machine whose clock is off still waits the interval it was asked to."""
        rows = self._rows(f"cannot read {agent}'s session",
                          "SELECT extract(epoch FROM clock_timestamp() - max(touched)) FROM "
                          "shown WHERE agent = %s AND session = %s", (agent, session))
        return None if rows[0][0] is None else time.time() - float(rows[0][0])

    def add_shown(self, agent: str, session: str, message_ids: Sequence[str]) -> None:
        if message_ids:
            self._do(f"cannot record {agent}'s session",
                     "INSERT INTO shown (agent, session, id) SELECT %s, %s, "
                     "unnest(%s::text[]) ON CONFLICT (agent, session, id) DO UPDATE SET "
                     "touched = now()", (agent, session, list(message_ids)))

    def prune_sessions(self, agent: str, older_than: float) -> None:
        """Untouched by the database's clock, the same for every machine."""
        def work(db: psycopg.Connection[Any]) -> None:
            with db.transaction():
                db.execute("DELETE FROM shown WHERE agent = %(a)s AND session IN (SELECT "
                           "session FROM shown WHERE agent = %(a)s GROUP BY session HAVING "
                           "max(touched) < now() - make_interval(secs => %(s)s))",
                           {"a": agent, "s": older_than})
                db.execute("DELETE FROM waiters WHERE agent = %s AND touched < now() - "
                           "make_interval(secs => %s)", (agent, older_than))
                for table in ("hook_sessions", "instance_mail"):
                    db.execute(f"DELETE FROM {table} WHERE agent = %s AND touched < now() "
                               "- make_interval(secs => %s)", (agent, older_than))
        self._run(f"cannot prune {agent}'s sessions", work)

    def refresh_hook_session(self, agent: str, session: str) -> bool:
        return bool(self._rows(f"cannot record {agent}'s session {session}",
                               "UPDATE hook_sessions SET touched = now() WHERE agent = %s "
                               "AND session = %s RETURNING 1", (agent, session)))

    def record_hook_session(self, agent: str, session: str, facts: Mapping[str, Any]
                            ) -> None:
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe to record")
        self._do(f"cannot record {agent}'s session {session}",
                 "INSERT INTO hook_sessions (agent, session, record) VALUES (%s, %s, %s) "
                 "ON CONFLICT (agent, session) DO UPDATE SET touched = now(), "
                 "record = excluded.record", (agent, session, json_text(facts)))

    def add_instance_mail(self, agent: str, message_id: str, session: str) -> None:
        self._do(f"cannot record {agent}'s mail {message_id}",
                 "INSERT INTO instance_mail (agent, id, session) VALUES (%s, %s, %s) "
                 "ON CONFLICT DO NOTHING", (agent, message_id, session))

    def instance_mail(self, agent: str) -> dict[str, str]:
        return dict(self._rows(f"cannot read {agent}'s mail",
                               "SELECT id, session FROM instance_mail WHERE agent = %s",
                               (agent,)))

    def hook_sessions(self) -> list[dict[str, Any]]:
        """``seen`` by this machine's clock, from how long ago the database says."""
        found: list[dict[str, Any]] = []
        now = time.time()
        for agent, session, line, ago in self._rows(
                "cannot read the hook sessions",
                "SELECT agent, session, record, extract(epoch FROM clock_timestamp() - "
                "touched) FROM hook_sessions ORDER BY agent, session"):
            try:
                record = json.loads(line)
            except ValueError:
                continue  # not one mailslot wrote: not a session
            if isinstance(record, dict):
                found.append({**record, "agent": agent, "session": session,
                              "seen": now - float(ago)})
        return found

    def set_latest_session(self, agent: str, host: str, session: str) -> None:
        if not (SESSION_KEY.fullmatch(session) and SESSION_KEY.fullmatch(host)):
            raise UnsafePath(f"session {session!r} of {host!r} is not safe to record")
        self._do(f"cannot record {agent}'s latest session",
                 "INSERT INTO latest_sessions VALUES (%s, %s, %s) ON CONFLICT (agent, host) "
                 "DO UPDATE SET session = excluded.session", (agent, host, session))

    def latest_session(self, agent: str, host: str) -> str | None:
        """Only a safe session key: the table is shared by every agent role, and the id
        becomes an argument of the wake command."""
        rows = self._rows(f"cannot read {agent}'s latest session",
                          "SELECT session FROM latest_sessions WHERE agent = %s AND host = %s",
                          (agent, host))
        return rows[0][0] if rows and SESSION_KEY.fullmatch(rows[0][0]) else None

    def claim(self, agent: str, path: str) -> str:
        rows = self._rows(f"cannot claim {agent}",
                          "INSERT INTO claims VALUES (%s, %s) ON CONFLICT (agent) DO UPDATE "
                          "SET path = claims.path RETURNING path", (agent, path))
        return str(rows[0][0])

    def replace_claim(self, agent: str, path: str) -> None:
        self._do(f"cannot claim {agent}", "INSERT INTO claims VALUES (%s, %s) ON CONFLICT "
                 "(agent) DO UPDATE SET path = excluded.path", (agent, path))

    def set_waiter(self, agent: str, session: str, pid: int) -> None:
        self._do(f"cannot record {agent}'s waiter",
                 "WITH w AS (INSERT INTO waiters (agent, session, pid) VALUES (%s, %s, %s) "
                 "ON CONFLICT (agent, session) DO UPDATE SET pid = excluded.pid, "
                 "touched = now() RETURNING agent) SELECT pg_notify(%s, 'waiter:' || agent) "
                 "FROM w", (agent, session, pid, CHANNEL))

    def waiter(self, agent: str, session: str) -> int | None:
        rows = self._rows(f"cannot read {agent}'s waiter", "SELECT pid FROM waiters WHERE "
                          "agent = %s AND session = %s", (agent, session))
        return int(rows[0][0]) if rows else None

    def waiter_pids(self, agent: str) -> list[int]:
        return [int(r[0]) for r in self._rows(f"cannot read {agent}'s waiters",
                                              "SELECT pid FROM waiters WHERE agent = %s",
                                              (agent,))]

    # Presence --------------------------------------------------------------------------
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        self._do(f"cannot record presence of {agent}",
                 "INSERT INTO presence VALUES (%s, %s, %s) ON CONFLICT (agent, key) "
                 "DO UPDATE SET record = excluded.record", (agent, key, json_text(record)))

    def presence(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for agent, key, line in self._rows("cannot read presence",
                                           "SELECT agent, key, record FROM presence "
                                           "ORDER BY agent, key"):
            record = json_object(line)
            found.append({**record, "agent": agent, "key": key})
        return found

    def remove_presence(self, agent: str, key: str) -> None:
        self._do(f"cannot remove presence of {agent}",
                 "DELETE FROM presence WHERE agent = %s AND key = %s", (agent, key))
