"""Search without an index: every message read and matched (the default of
:meth:`~mailslot.store.base.Store.search`).

The same language, filters and order as the backends' indexes (:mod:`mailslot.core.query`;
the file store's SQLite index, PostgreSQL's ``tsvector``): a word matches a whole word,
a phrase its words in a row in the subject or the body, a prefix the start of a word;
matches are ranked by how often their words occur, a subject word weighing four times a
body word, among the newest :data:`CANDIDATES`; without words, oldest first. It reads
every message, so it is for a small store (memory, tests); a backend with an index
overrides it.
"""

from __future__ import annotations

from ..core.errors import NotFound, Unreadable
from ..core.message import STATES
from ..core.query import All, Any, Not, Search, Term, utc, words_of

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
    chosen = [m for m in every_message(store) if _passes(m, request)]
    chosen.sort(key=lambda m: (utc(m.date), m.id))
    if request.match is None:
        ordered = [m.id for m in chosen]
    else:
        scored = [(score, m) for m in chosen[-CANDIDATES:]
                  if (score := _score(request.match, _fields(m))) is not None]
        scored.sort(key=lambda pair: (pair[0], utc(pair[1].date)), reverse=True)
        ordered = [m.id for _, m in scored]
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


def _score(node: Node, fields: tuple[list[str], list[str]]) -> float | None:
    """How well ``node`` matches (subject hits four times body hits), ``None``: not."""
    if isinstance(node, Term):
        hits = [_count(node, words) for words in fields]
        return 4.0 * hits[0] + hits[1] if any(hits) else None
    if isinstance(node, Not):
        return None if _score(node.part, fields) is not None else 0.0
    scores = [_score(part, fields) for part in node.parts]
    if isinstance(node, All):
        return None if None in scores else sum(s for s in scores if s is not None)
    assert isinstance(node, Any)
    found = [s for s in scores if s is not None]
    return sum(found) if found else None


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
