"""The PostgreSQL store's upkeep (``mailslot doctor``): the schema's version, forged rows
found and set aside, unreadable rows, the quarantine.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ...core.errors import NotFound, StoreError, Unreadable
from .pg_connection import PgConnection
from .pg_schema import LATEST, schema_version


class PgUpkeep(PgConnection):
    """What ``doctor`` finds on PostgreSQL (nothing is staged, counted or permissioned
    by mailslot there: the ``Upkeep`` role's defaults hold), and
    the quarantine (a ``Mail`` primitive)."""

    def problems(self, *, deep: bool = False) -> list[str]:
        """The database's own checks keep rows whole; what is left to report is a
        schema this mailslot does not know (the same with ``deep``: nothing is listed)."""
        version = self._run("cannot read the schema version", schema_version)
        if version is not None and version > LATEST:
            return [f"{self.location} has schema version {version}; this mailslot knows "
                    f"{LATEST} (upgrade mailslot)"]
        return self._refused()

    def quarantine(self, agent: str | None, message_id: str) -> str:
        if not self._quarantine(agent, message_id, None):
            raise NotFound(f"no message {message_id} for {agent or 'the broadcasts'}")
        return f"{self.location}#quarantine/{agent or 'broadcast'}/{message_id}"

    def _quarantine(self, agent: str | None, message_id: str, reason: str | None) -> int:
        """Move one row to the quarantine (``''``: a broadcast), with why if refused."""
        if agent is None:
            sql = ("WITH gone AS (DELETE FROM broadcasts WHERE id = %s RETURNING id, data) "
                   "INSERT INTO quarantine (agent, id, data, reason) SELECT '', id, data, "
                   "%s FROM gone")
            params: tuple[str | None, ...] = (message_id, reason)
        else:
            sql = ("WITH gone AS (DELETE FROM mail WHERE agent = %s AND id = %s RETURNING "
                   "agent, id, data) INSERT INTO quarantine (agent, id, data, reason) "
                   "SELECT agent, id, data, %s FROM gone")
            params = (agent, message_id, reason)

        def work(db: psycopg.Connection[Any]) -> int:
            with db.transaction():
                gone = db.execute(sql, params).rowcount
                if gone:
                    self._announce(db, agent or "*")
                return gone
        return self._run(f"cannot quarantine {message_id}", work)  # type: ignore[no-any-return]

    def _set_aside(self, agent: str | None, message_id: str, reason: str) -> None:
        """Quarantine a refused row if this role may (its own mail; a broadcast: the
        admin role only). Where it may not, or the move fails, the row stays where it
        is and is refused again at every read: never shown either way."""
        try:
            self._quarantine(agent, message_id, reason)
        except StoreError:
            return

    _SUSPECTS = (
        "SELECT agent, id FROM (SELECT {agent} AS agent, id, sender, substring(data FROM 1 "
        "FOR position('\\x0a2d2d2d0a'::bytea IN data)) AS head FROM {table} "
        "WHERE sender <> '') m WHERE split_part(id, '_', 3) <> sender "
        "OR position(convert_to(E'\\nfrom: ' || sender || E'\\n', 'UTF8') IN head) = 0 "
        "OR position('\\x5c'::bytea IN head) > 0 "
        "OR length(encode(head, 'escape')) - length(replace(encode(head, 'escape'), "
        "'from', '')) <> 4")
    """Rows whose header may name another sender than the bound one, found without
    reading every message: any header that lacks the one exact line ``from: SENDER``,
    spells ``from`` more or less than once (a duplicate key, an alias, a quoted key),
    holds a backslash (an escaped key), or whose id names another sender. Mailslot
    writes none of these for an agent's name, so a healthy store has almost none; each
    is then read to be sure."""

    def _refused(self) -> list[str]:
        """Find and set aside forged rows (reading only the suspects), then every row
        the quarantine holds with a reason, one line each, for ``doctor``."""
        for table, agent in (("mail", "agent"), ("broadcasts", "NULL::text")):
            sql = self._SUSPECTS.format(table=table, agent=agent)
            for name, message_id in self._rows("cannot check the senders", sql):
                try:
                    if name is None:
                        self.load_broadcast(message_id, header_only=True)
                    else:
                        self.load(name, message_id, header_only=True)
                except (Unreadable, NotFound):
                    continue  # refused and set aside now, or unreadable: --deep says
        return [f"{self.location}#quarantine/{name or 'broadcast'}/{message_id}: refused, "
                f"{why}; kept in the quarantine table (look at it, then delete the row as "
                "the admin role)"
                for name, message_id, why in self._rows(
                    "cannot read the quarantine", "SELECT agent, id, reason FROM quarantine "
                    "WHERE reason IS NOT NULL ORDER BY id")]
