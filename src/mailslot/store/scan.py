"""Search without an index: every message read and matched (the default of
:meth:`~mailslot.store.base.Store.search`).

The same language, filters and order as the backends' indexes (:mod:`mailslot.core.query`;
the file store's SQLite index, PostgreSQL's ``tsvector``): a word matches a whole word,
a phrase its words in a row in the subject or the body, a prefix the start of a word;
matches are ranked as SQLite's FTS5 ranks them (BM25, a subject word weighing four times
a body word) among the newest :data:`CANDIDATES`; without words, oldest first. It reads
every message, so it is for a small store (memory, tests); a backend with an index
overrides it (``tests/test_scan.py`` holds it to the file store's index).
"""

from __future__ import annotations

import math

from ..core.errors import NotFound, Unreadable
from ..core.message import STATES
from ..core.query import All, Not, Search, Term, utc, words_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..core.message import Message
    from ..core.query import Node
    from .primitives import Primitives as Store

CANDIDATES = 2000
"""As the indexes: ranking looks at the newest this many matches."""


def every_message(store: Store) -> Iterator[Message]:
    """Every readable message delivered or published, each once."""
    found: set[str] = set()
    for agent in store.agent_names():
        for message_id, _ in store.entries(agent, STATES):
            if message_id not in found:
                found.add(message_id)
                try:
                    yield store.load(agent, message_id)[0]
                except (NotFound, Unreadable):
                    continue
    for live in (True, False):
        for message_id in store.broadcast_ids(live=live):
            if message_id not in found:
                found.add(message_id)
                try:
                    yield store.load_broadcast(message_id)[0]
                except (NotFound, Unreadable):
                    continue


def search(store: Store, request: Search) -> list[str]:
    """The ids ``request`` finds in ``store``, in the indexes' order."""
    every = sorted(every_message(store), key=lambda m: (utc(m.date), m.id))
    chosen = [m for m in every if _passes(m, request)]
    if request.match is None:
        ordered = [m.id for m in chosen]
    else:
        fields = {m.id: _fields(m) for m in every}
        found = [m for m in chosen if _matches(request.match, fields[m.id])][-CANDIDATES:]
        rank = _Ranking(request.match, list(fields.values()))
        found.sort(key=lambda m: (rank.score(fields[m.id]), utc(m.date)), reverse=True)
        ordered = [m.id for m in found]
    return ordered[request.offset:request.offset + request.limit]


def _passes(message: Message, request: Search) -> bool:
    """Does ``message`` pass the request's filters (words apart)?"""
    to = message.to
    if request.reader is not None and request.reader not in to and to != ("all",) and not (
            request.sent and message.sender == request.reader):
        return False
    when = utc(message.date)
    return ((request.sender is None or message.sender == request.sender)
            and (request.recipient is None or request.recipient in to)
            and (request.since is None or when >= request.since)
            and (request.until is None or when < request.until)
            and (request.thread is None or (message.thread or message.id) == request.thread))


def _fields(message: Message) -> tuple[list[str], list[str]]:
    return words_of(message.subject), words_of(message.body)


def _matches(node: Node, fields: tuple[list[str], list[str]]) -> bool:
    if isinstance(node, Term):
        return any(_count(node, words) for words in fields)
    if isinstance(node, Not):
        return not _matches(node.part, fields)
    found = [_matches(part, fields) for part in node.parts]
    return all(found) if isinstance(node, All) else any(found)


class _Ranking:
    """Okapi BM25 as SQLite's FTS5 computes it (``bm25(words, 4.0, 1.0)``): over every
    phrase of the query, its rarity among all messages times its hits in this one (a
    subject hit four times a body hit), weighed down in a long message."""

    def __init__(self, match: Node, every: list[tuple[list[str], list[str]]]) -> None:
        self.phrases = list(_phrases(match))
        rows = max(len(every), 1)
        self.average = sum(len(s) + len(b) for s, b in every) / rows or 1.0
        self.rarity = []
        for phrase in self.phrases:
            hits = sum(1 for fields in every if any(_count(phrase, w) for w in fields))
            self.rarity.append(max(math.log((rows - hits + 0.5) / (hits + 0.5)), 1e-6))

    def score(self, fields: tuple[list[str], list[str]]) -> float:
        size = (len(fields[0]) + len(fields[1])) / self.average
        total = 0.0
        for phrase, rarity in zip(self.phrases, self.rarity, strict=True):
            hits = 4.0 * _count(phrase, fields[0]) + _count(phrase, fields[1])
            total += rarity * hits * 2.2 / (hits + 1.2 * (0.25 + 0.75 * size))
        return total


def _phrases(node: Node) -> list[Term]:
    if isinstance(node, Term):
        return [node]
    if isinstance(node, Not):
        return _phrases(node.part)
    return [term for part in node.parts for term in _phrases(part)]


def _count(term: Term, words: list[str]) -> int:
    """How often ``term``'s words stand in a row in ``words`` (the last as a prefix if
    the term is one)."""
    size = len(term.words)
    if not size:
        return 0
    last = size - 1
    return sum(1 for at in range(len(words) - last)
               if all(words[at + n] == w for n, w in enumerate(term.words[:last]))
               and (words[at + last].startswith(term.words[last]) if term.prefix
                    else words[at + last] == term.words[last]))
