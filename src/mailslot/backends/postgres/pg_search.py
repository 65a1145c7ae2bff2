"""The PostgreSQL store's search: the ``search`` table of schema migration 6.

One row per message, written in the transaction that delivers or publishes it, so the
index is never behind the mail; its words are PostgreSQL's full-text ``tsvector`` of the
words :func:`mailslot.core.query.words_of` finds (a subject word weighs four times a body
word, as in the file store's ranking). A query's tree (:mod:`mailslot.core.query`) becomes a
``tsquery`` whose every word is quoted: no text a user types is read as PostgreSQL's
own query syntax. The same filters and order as the file store's index
(:mod:`.search_index`): the newest :data:`~.search_index.CANDIDATES` matches ranked,
best first; without words, oldest first.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ...core.errors import Unreadable
from ...core.message import Message
from ...core.query import All, Node, Not, Search, Term, utc, words_of
from ...core.query import Any as Either
from ...store.format import parse_message_file
from .pg_connection import PgConnection

CANDIDATES = 2000
"""As the file store's index: ranking looks at the newest this many matches."""

INDEX = ("INSERT INTO search (id, sender, recipients, utc, thread, words) VALUES "
         "(%s, %s, %s, %s, %s, setweight(to_tsvector('simple', %s), 'A') || "
         "setweight(to_tsvector('simple', %s), 'B')) ON CONFLICT (id) DO NOTHING")
"""Adds one message (a second delivery of the same id adds nothing)."""


def index_row(message: Message) -> tuple[Any, ...]:
    """The parameters of :data:`INDEX` for ``message``."""
    return (message.id, message.sender, list(message.to), utc(message.date),
            message.thread or message.id, " ".join(words_of(message.subject)),
            " ".join(words_of(message.body)))


def tsquery(node: Node) -> str:
    """``node`` in ``to_tsquery`` syntax, every word quoted; words come from
    :func:`~mailslot.core.query.words_of`, so none holds a quote or a backslash."""
    if isinstance(node, Term):
        words = [f"'{w}'" for w in node.words]
        if node.prefix:
            words[-1] += ":*"
        return "(" + " <-> ".join(words) + ")"
    if isinstance(node, Either):
        return "(" + " | ".join(tsquery(p) for p in node.parts) + ")"
    if isinstance(node, Not):
        return f"!{tsquery(node.part)}"
    assert isinstance(node, All)
    return "(" + " & ".join(tsquery(p) for p in node.parts) + ")"


def select(request: Search) -> tuple[str, list[Any]]:
    """The query for ``request`` and its parameters."""
    where: list[str] = []
    params: list[Any] = []
    if request.match is not None:
        where.append("words @@ to_tsquery('simple', %s)")
        params.append(tsquery(request.match))
    if request.reader is not None:
        seen_by = ["%s = ANY (recipients)", "recipients = '{all}'"]
        params.append(request.reader)
        if request.sent:
            seen_by.append("sender = %s")
            params.append(request.reader)
        where.append("(" + " OR ".join(seen_by) + ")")
    for clause, value in (("sender = %s", request.sender),
                          ("%s = ANY (recipients)", request.recipient),
                          ("utc >= %s", request.since), ("utc < %s", request.until),
                          ("thread = %s", request.thread)):
        if value is not None:
            where.append(clause)
            params.append(value)
    condition = " WHERE " + " AND ".join(where) if where else ""
    if request.match is not None:
        sql = ("SELECT id FROM (SELECT id, utc, ts_rank('{0.1, 0.2, 0.25, 1.0}', words, "
               "to_tsquery('simple', %s)) AS score FROM search" + condition +
               f" ORDER BY utc DESC LIMIT {CANDIDATES}) c ORDER BY score DESC, utc DESC")
        params.insert(0, tsquery(request.match))
    else:
        sql = f"SELECT id FROM search{condition} ORDER BY utc, id"
    return sql + " LIMIT %s OFFSET %s", [*params, request.limit, request.offset]


NO_ARCHIVE = ("archive is for the file store: on PostgreSQL done mail stays in its table, "
              "indexed and searchable (docs/keep.md, \"Retention\"); nothing was changed")
"""Why PostgreSQL keeps no month archives (a decision, docs/keep.md): a table of done
rows costs a database little, and a partition per month is the database
administrator's tool, not mailslot's."""


class PgSearch(PgConnection):
    """The ``Searching`` role on PostgreSQL (overriding the store's defaults): its own
    full-text search, written in the delivery's transaction."""

    _no_archive = NO_ARCHIVE

    def search(self, request: Search) -> list[str]:
        """Rebuilds first once after the upgrade that added search to a store with mail."""
        if self._rows("cannot search", "SELECT FROM search_stale"):
            self.reindex()
        sql, params = select(request)
        return [r[0] for r in self._rows("cannot search", sql, params)]

    def reindex(self) -> int:
        """From every stored message, in one transaction (the admin role's work)."""
        def work(db: psycopg.Connection[Any]) -> int:
            with db.transaction():
                db.execute("DELETE FROM search")
                stored = db.execute("SELECT DISTINCT ON (id) id, data FROM (SELECT id, data "
                                    "FROM mail UNION ALL SELECT id, data FROM broadcasts) m "
                                    "ORDER BY id").fetchall()
                for message_id, data in stored:
                    try:
                        message = parse_message_file(bytes(data), message_id, message_id, False)
                    except Unreadable:
                        continue  # doctor --deep names it
                    db.execute(INDEX, index_row(message))
                db.execute("DELETE FROM search_stale")
                row = db.execute("SELECT count(*) FROM search").fetchone()
                return int(row[0]) if row else 0
        return self._run("cannot rebuild the search index", work)  # type: ignore[no-any-return]
