"""The PostgreSQL store's access state: registered agents, gates and fences (the rules
are in :mod:`mailslot.access`), and the database roles ``mailslot pg grant`` creates.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.errors import NotFound, Unreadable
from ...core.names import check_name, is_accept
from ...store.format import decode_record, encode_record
from ...store.records import AgentRecord
from .pg_connection import PgConnection
from .pg_schema import grant


class PgAccess(PgConnection):
    """The :class:`~mailslot.store.roles.Registry`, :class:`~mailslot.store.roles.Gates`
    and :class:`~mailslot.store.roles.Fences` roles on PostgreSQL."""

    # Registered agents (rules in mailslot.access.authority) ----------------------------
    # The same JSON record the file store keeps in registry/<name>.json, one row each.
    def register_agent(self, record: AgentRecord) -> bool:
        return bool(self._rows(f"cannot register {record.name}",
                               "INSERT INTO registry VALUES (%s, %s) ON CONFLICT DO NOTHING "
                               "RETURNING 1", (record.name, encode_record(record))))

    def _record(self, name: str, data: bytes) -> AgentRecord:
        return decode_record(bytes(data), name, f"{self.location}#registry/{name}")

    def registered(self, name: str) -> AgentRecord | None:
        rows = self._rows(f"cannot read {name}'s registration",
                          "SELECT record FROM registry WHERE name = %s", (name,))
        return self._record(name, rows[0][0]) if rows else None

    def registered_agents(self) -> list[AgentRecord]:
        found = []
        for name, data in self._rows("cannot list the registered agents",
                                     "SELECT name, record FROM registry ORDER BY name"):
            try:
                found.append(self._record(name, data))
            except Unreadable:
                continue  # doctor names it; a listing goes on
        return found

    def replace_registered(self, record: AgentRecord) -> None:
        if not self._rows(f"cannot update {record.name}'s registration",
                          "UPDATE registry SET record = %s WHERE name = %s RETURNING 1",
                          (encode_record(record), record.name)):
            raise NotFound(f"no registered agent {record.name}")

    # Gates (rules in mailslot.access.gates) --------------------------------------------
    def set_accept(self, agent: str, accept: str) -> None:
        self._do(f"cannot set {agent}'s gate",
                 "INSERT INTO gates VALUES (%s, %s) ON CONFLICT (agent) DO UPDATE "
                 "SET accept = excluded.accept", (agent, accept))

    def accept_of(self, agent: str) -> str:
        """``"open"`` when never set; anything unknown reads as ``"members"`` (shut)."""
        rows = self._rows(f"cannot read {agent}'s gate",
                          "SELECT accept FROM gates WHERE agent = %s", (agent,))
        value = rows[0][0] if rows else "open"
        return value if is_accept(value) else "members"

    def gated(self) -> dict[str, str]:
        rows = self._rows("cannot read the gates",
                          "SELECT agent, accept FROM gates WHERE accept <> 'open' "
                          "ORDER BY agent")
        return {agent: accept if is_accept(accept) else "members" for agent, accept in rows}

    def set_member(self, agent: str, member: str, admitted: bool) -> bool:
        sql = ("INSERT INTO members VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING 1"
               if admitted else
               "DELETE FROM members WHERE agent = %s AND member = %s RETURNING 1")
        return bool(self._rows(f"cannot change {agent}'s members", sql, (agent, member)))

    def members(self, agent: str) -> list[str]:
        return [r[0] for r in self._rows(f"cannot read {agent}'s members",
                                         "SELECT member FROM members WHERE agent = %s "
                                         "ORDER BY member", (agent,))]

    def set_request(self, agent: str, requester: str, message_id: str | None) -> None:
        if message_id is None:
            self._do(f"cannot close a request to {agent}",
                     "DELETE FROM requests WHERE agent = %s AND requester = %s",
                     (agent, requester))
        else:
            self._do(f"cannot record a request to {agent}",
                     "INSERT INTO requests VALUES (%s, %s, %s) ON CONFLICT (agent, "
                     "requester) DO UPDATE SET id = excluded.id", (agent, requester,
                                                                    message_id))

    def requests(self, agent: str) -> dict[str, str]:
        return dict(self._rows(f"cannot read the requests to {agent}",
                               "SELECT requester, id FROM requests WHERE agent = %s",
                               (agent,)))

    def add_passed(self, agent: str, message_ids: Sequence[str]) -> None:
        if message_ids:
            self._do(f"cannot record what passed {agent}'s gate",
                     "INSERT INTO passed SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                     (agent, list(message_ids)))

    def passed(self, agent: str) -> set[str]:
        return {r[0] for r in self._rows(f"cannot read what passed {agent}'s gate",
                                         "SELECT id FROM passed WHERE agent = %s", (agent,))}

    # Fenced sessions (rules in mailslot.access.fencing) ---------------------------------
    def fence(self, agent: str, session: str, by: str) -> None:
        """Once: a second fence of the same session keeps the first."""
        self._do(f"cannot fence {agent}'s session", "INSERT INTO fences VALUES (%s, %s, %s) "
                 "ON CONFLICT DO NOTHING", (agent, session, by))

    def fenced_by(self, agent: str, session: str) -> str | None:
        rows = self._rows(f"cannot read {agent}'s sessions",
                          "SELECT by_session FROM fences WHERE agent = %s AND session = %s",
                          (agent, session))
        return str(rows[0][0]) if rows else None

    # Agent roles -----------------------------------------------------------------
    def grant(self, agent: str) -> str:
        """Create the database role for ``agent`` (``mailslot pg grant``); one line back."""
        name = check_name(agent, "agent name")
        role = self._run(f"cannot create a role for {name}", lambda db: grant(db, name))
        return (f"role {role} may now use {self.location} as {name}: it reads and moves "
                f"only {name}'s mail and sends only as {name}; give it a password (ALTER "
                f"ROLE {role} PASSWORD ...) or a client certificate (docs/multi-host.md)")
