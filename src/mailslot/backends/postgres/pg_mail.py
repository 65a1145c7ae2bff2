"""The PostgreSQL store's mail and broadcasts: one ``mail`` row per recipient and
message, one ``broadcasts`` row per broadcast, the exact bytes the file store writes.

A send is one transaction (its search row with it), announced with ``NOTIFY`` on commit;
a row whose header names another sender than the one the database bound is refused
(:class:`Forged`) and set aside.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg

from ...core.errors import IdTaken, NotFound, StoreError, Unreadable
from ...core.ids import is_id, sender_of
from ...core.message import STATES, Message, State, to_bytes
from ...core.text import quoted
from ...store.format import parse_message_file
from . import pg_search
from .pg_connection import CHANNEL, PgConnection

RECONNECT_SECONDS = 5.0
"""How long a send whose connection broke waits for the server to be back (a restart
takes a second or two) before saying whether it was sent."""


class PgMail(PgConnection):
    """The :class:`~mailslot.store.primitives.Mail` and
    :class:`~mailslot.store.primitives.Broadcasts` primitives on PostgreSQL, with the
    counts its indexes answer without listing (migration 14)."""

    # Directed mail ---------------------------------------------------------------------
    def _insert_message(self, what: str, message: Message,
                        statements: Sequence[tuple[str, Sequence[Any]]], owner: str) -> None:
        """Run ``statements`` in one transaction; a taken id is ``IdTaken``.

        A connection lost mid-send (the server restarted) is made again, waiting up to
        :data:`RECONNECT_SECONDS`; then a send cut off before its commit runs again
        once, and one cut off during its commit is looked up (its search row is written
        in the same transaction), so it is neither lost nor doubled. If the server does
        not come back, the one-line error says whether the message was sent: "nothing
        was sent", or, lost during the commit, that it cannot be known yet."""
        stage = ["connecting"]

        def work(db: psycopg.Connection[Any]) -> None:
            stage[0] = "sending"
            with db.transaction():
                for sql, params in statements:
                    db.execute(sql, params)
                stage[0] = "committing"  # every statement done: only the commit is left

        for attempt in (1, 2):
            stage[0] = "connecting"
            try:
                self._run(what, work, repeat=False)
                return
            except StoreError as exc:
                cause = exc.__context__
                if isinstance(cause, pg.UniqueViolation):
                    if attempt == 2:  # ids are random: the first attempt landed after all
                        return
                    raise IdTaken(f"{message.id} is already taken in {owner}; nothing was "
                                  "written") from None
                if not isinstance(cause, psycopg.OperationalError):
                    raise
                if stage[0] == "connecting":
                    raise  # no connection: nothing was written, and the error says so
                if not self._reconnect():
                    raise self._unsent(exc, message, stage[0]) from None
                if stage[0] == "committing" and self._landed(message):
                    return
                if attempt == 2:  # the server is there, and the message is not
                    raise self._unsent(exc, message, "sending") from None

    def _reconnect(self) -> bool:
        """Connect again, waiting up to :data:`RECONNECT_SECONDS` for the server."""
        deadline = time.monotonic() + RECONNECT_SECONDS
        while True:
            try:
                with self._link.lock:
                    self._connect()
                return True
            except StoreError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.5)

    def _landed(self, message: Message) -> bool:
        """Did the delivery of ``message`` commit? Its search row says (a sender's role
        may read it, and it is written in the same transaction)."""
        return bool(self._rows(f"cannot look up {message.id}",
                               "SELECT FROM search WHERE id = %s", (message.id,)))

    @staticmethod
    def _unsent(exc: StoreError, message: Message, stage: str) -> StoreError:
        """``exc`` with what became of the message: never a guess."""
        if stage == "committing":
            return StoreError(f"{exc}; whether {message.id} was sent cannot be known until "
                              "the database is back (the connection broke during its "
                              "commit): look with `mailslot status ID` before sending again")
        return StoreError(f"{exc}; nothing was sent (it never committed)")

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        names = list(recipients)
        self._insert_message(f"cannot deliver {message.id} to {', '.join(names)}", message, [
            ("INSERT INTO mail (agent, id, state, data, sender, reply_to) SELECT a, %s, "
             "'unread', %s, %s, %s FROM unnest(%s::text[]) a",
             (message.id, to_bytes(message), message.sender, message.in_reply_to, names)),
            ("SELECT pg_notify(%s, 'mail:' || a) FROM unnest(%s::text[]) a", (CHANNEL, names)),
            (pg_search.INDEX, pg_search.index_row(message)),
        ], "a recipient's mailbox")

    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        return [(i, s) for i, s in self._rows(
            f"cannot list {agent}'s mail",
            "SELECT id, state FROM mail WHERE agent = %s AND state = ANY(%s)",
            (agent, list(states)))]

    def load(self, agent: str, message_id: str, *, header_only: bool = False,
             state: State | None = None) -> tuple[Message, State]:
        rows = self._rows(f"cannot read {message_id}",
                          "SELECT data, state, sender FROM mail WHERE agent = %s AND id = %s",
                          (agent, message_id))
        if not rows:
            raise NotFound(f"no message {message_id} for {agent}")
        data, state, bound = rows[0]
        message = parse_message_file(bytes(data), message_id, self._place(agent, message_id),
                                     header_only)
        return self._bound(agent, message, bound), state

    def state_of(self, agent: str, message_id: str) -> State | None:
        rows = self._rows(f"cannot read {message_id}",
                          "SELECT state FROM mail WHERE agent = %s AND id = %s",
                          (agent, message_id))
        return rows[0][0] if rows else None

    def move(self, agent: str, message_id: str, to: State) -> State:
        def work(db: psycopg.Connection[Any]) -> State:
            with db.transaction():
                row = db.execute("SELECT state FROM mail WHERE agent = %s AND id = %s "
                                 "FOR UPDATE", (agent, message_id)).fetchone()
                if row is None:
                    raise NotFound(f"no message {message_id} for {agent}")
                state: State = row[0]
                if STATES.index(state) < STATES.index(to):
                    db.execute("UPDATE mail SET state = %s WHERE agent = %s AND id = %s",
                               (to, agent, message_id))
                    self._announce(db, agent)
                return state
        return self._run(f"cannot move {message_id}", work)  # type: ignore[no-any-return]

    def count_done(self, agent: str) -> int:
        """Counted on the ``(agent, state, id)`` index (migration 14): asked only when a
        page of the inbox is empty."""
        rows = self._rows(f"cannot count {agent}'s mail",
                          "SELECT count(*) FROM mail WHERE agent = %s AND state = 'done'",
                          (agent,))
        return int(rows[0][0])

    def count_unread(self, agent: str, oldest: int = 0) -> tuple[int, list[str]]:
        """Both on the ``(agent, state, id)`` index (migration 14)."""
        rows = self._rows(f"cannot count {agent}'s mail",
                          "SELECT count(*) FROM mail WHERE agent = %s AND state = 'unread'",
                          (agent,))
        first = self._rows(f"cannot list {agent}'s mail",
                           "SELECT id FROM mail WHERE agent = %s AND state = 'unread' "
                           "ORDER BY id LIMIT %s", (agent, oldest)) if oldest else []
        return int(rows[0][0]), [r[0] for r in first]

    def correspondents(self, agent: str) -> set[str]:
        """A skip scan of the ``(agent, sender)`` index: one look-up per sender, not
        per message. Rows from before senders were bound (``''``) name theirs in the id."""
        rows = self._rows(f"cannot list who wrote to {agent}", """
            WITH RECURSIVE s(sender) AS (
                (SELECT sender FROM mail WHERE agent = %(a)s ORDER BY sender LIMIT 1)
                UNION ALL
                SELECT (SELECT m.sender FROM mail m WHERE m.agent = %(a)s
                        AND m.sender > s.sender ORDER BY m.sender LIMIT 1)
                FROM s WHERE s.sender IS NOT NULL)
            SELECT sender FROM s WHERE sender IS NOT NULL""", {"a": agent})
        found = {r[0] for r in rows if r[0]}
        if "" in {r[0] for r in rows}:
            found.update(sender_of(i) for i, _ in self.entries(agent, STATES))
        return found

    def sent_ids(self, sender: str, limit: int | None = None) -> list[str]:
        """Newest first down the ``(sender, id)`` indexes (migration 14), reading only as
        many rows as the page needs (a message to several has a row per recipient, so
        more are read until ``limit`` distinct ids are found); rows from before senders
        were bound (``''``) are looked at by their id."""
        legacy = self._rows("cannot list older mail", """
            SELECT id FROM mail WHERE sender = '' UNION
            SELECT id FROM broadcasts WHERE sender = ''""")
        old = {r[0] for r in legacy if sender_of(r[0]) == sender}
        rows = limit if limit is None else limit * 2
        while True:
            found = self._rows(f"cannot list what {sender} sent", """
                (SELECT id FROM mail WHERE sender = %(s)s ORDER BY id DESC LIMIT %(n)s)
                UNION ALL
                (SELECT id FROM broadcasts WHERE sender = %(s)s ORDER BY id DESC
                 LIMIT %(n)s)""", {"s": sender, "n": rows})
            ids = sorted({r[0] for r in found} | old, reverse=True)
            if limit is None or rows is None or len(ids) >= limit or len(found) < rows:
                return ids if limit is None else ids[:limit]
            rows *= 4

    def _place(self, agent: str, message_id: str) -> str:
        return f"{self.location}#{agent}/{message_id}"

    # Broadcasts ------------------------------------------------------------------------
    def publish(self, message: Message) -> None:
        self._insert_message(f"cannot publish {message.id}", message, [
            ("INSERT INTO broadcasts (id, live, data, sender) VALUES (%s, true, %s, %s)",
             (message.id, to_bytes(message), message.sender)),
            ("SELECT pg_notify(%s, 'mail:*')", (CHANNEL,)),
            (pg_search.INDEX, pg_search.index_row(message)),
        ], "the broadcasts")

    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        return [r[0] for r in self._rows("cannot list the broadcasts",
                                         "SELECT id FROM broadcasts WHERE live = %s", (live,))]

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        rows = self._rows(f"cannot read broadcast {message_id}",
                          "SELECT data, live, sender FROM broadcasts WHERE id = %s",
                          (message_id,))
        if not rows:
            raise NotFound(f"no broadcast {message_id}")
        data, live, bound = rows[0]
        message = parse_message_file(bytes(data), message_id, self._place("broadcast", message_id),
                         header_only)
        return self._bound(None, message, bound), live

    def _bound(self, agent: str | None, message: Message, bound: str) -> Message:
        """``message`` if its header names the sender the database bound to its row (the
        ``sender`` column the row-level policies check); else the row is refused:
        :class:`Forged`, after setting it aside in the quarantine with the reason, where
        ``doctor`` reports it. ``''``: a row from before senders were bound (migrations
        3 and 8), written by the admin role, which no agent role can write."""
        if bound == "" or (message.sender == bound
                           and (not is_id(message.id) or sender_of(message.id) == bound)):
            return message
        named = message.sender if message.sender != bound else sender_of(message.id)
        why = (f"it says it is from {quoted(named)} but the database bound it to "
               f"{quoted(bound)} (a forged sender)")
        self._set_aside(agent, message.id, why)
        raise Forged(f"{self._place(agent or 'broadcast', message.id)}: {why}; mailslot "
                     "refuses it (see mailslot doctor)")

    def retract(self, message_id: str) -> bool:
        def work(db: psycopg.Connection[Any]) -> bool:
            with db.transaction():
                row = db.execute("SELECT live FROM broadcasts WHERE id = %s FOR UPDATE",
                                 (message_id,)).fetchone()
                if row is None:
                    raise NotFound(f"no broadcast {message_id}")
                if row[0]:
                    db.execute("UPDATE broadcasts SET live = false WHERE id = %s",
                               (message_id,))
                    self._announce(db, "*")
                return bool(row[0])
        return self._run(f"cannot retract {message_id}", work)  # type: ignore[no-any-return]

    def archive_mailbox(self, agent: str, stamp: str) -> str:
        box = f"{agent}-{stamp}"

        def work(db: psycopg.Connection[Any]) -> int:
            with db.transaction():
                moved = db.execute("WITH gone AS (DELETE FROM mail WHERE agent = %s "
                                   "RETURNING agent, id, state, data) INSERT INTO "
                                   "archived_mail SELECT %s, * FROM gone", (agent, box))
                if moved.rowcount:
                    self._announce(db, agent)
                return moved.rowcount
        if not self._run(f"cannot archive {agent}'s mailbox", work):
            raise NotFound(f"no mailbox for {agent}")
        return f"{self.location}#archive/{box}"

    # Mailboxes -------------------------------------------------------------------------
    _AGENT_NAMES = ("WITH RECURSIVE a (agent) AS (SELECT min(agent) FROM mail UNION ALL "
                    "SELECT (SELECT min(agent) FROM mail WHERE agent > a.agent) FROM a "
                    "WHERE a.agent IS NOT NULL) SELECT agent FROM a WHERE agent IS NOT NULL")
    """One index probe per mailbox (the primary key's leading ``agent``), not a scan of
    every message: ``SELECT DISTINCT agent`` read all 1,000,000 rows of a team's
    history (a quarter of a second) on every send to a new name."""

    def agent_names(self) -> list[str]:
        return [r[0] for r in self._rows("cannot list the mailboxes", self._AGENT_NAMES)]


class Forged(Unreadable):
    """A row whose header names another sender than the one the database bound: set
    aside as it is read, so ``doctor``'s list of unreadable mail leaves it out."""

    set_aside = True
