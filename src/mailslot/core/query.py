"""A search query, parsed once into a small tree every backend can translate.

The syntax a user types (``mailslot search``, the ``search_messages`` tool)::

    deploy                      a word (matched as a whole word, any case)
    deplo*                      a prefix
    "database migration"        a phrase (the words next to each other, in order)
    deploy migration            both (AND is implied between terms)
    deploy AND NOT staging      boolean operators, upper case: AND, OR, NOT
    (deploy OR release) -test   parentheses; ``-word`` is short for ``NOT word``

Parsing here (rather than handing the text to SQLite) means a query can never use a
backend's own syntax (column filters, ``NEAR``) or fail inside it with an error only that
backend understands: a bad query is one :class:`~mailslot.core.errors.InvalidInput` line.
"""

from __future__ import annotations

import re

from .dates import UTC, datetime
from .errors import InvalidInput
from .values import dataclass

MAX_QUERY_LENGTH = 1000


@dataclass(frozen=True)
class Term:
    """Words that must appear in this order (one word, or a quoted phrase); ``prefix``:
    the last word may go on (``deplo*``)."""

    words: tuple[str, ...]
    prefix: bool = False


@dataclass(frozen=True)
class Not:
    part: Node


@dataclass(frozen=True)
class All:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Any:
    parts: tuple[Node, ...]


Node = Term | Not | All | Any

_TOKEN = re.compile(r'\s*(?:(")([^"]*)("?)|(\()|(\))|(-?)([^\s()"]+))')
_WORD = re.compile(r"\w+")


def utc(date: str) -> str:
    """A message's date in UTC, as searches and exports compare dates (unparseable: as
    written)."""
    try:
        return datetime.fromisoformat(date).astimezone(UTC).isoformat()
    except ValueError:
        return date


def words_of(text: str) -> list[str]:
    """The words a text is indexed by: runs of letters and digits, lower case."""
    return [w.lower() for w in _WORD.findall(text)]


def parse(text: str) -> Node:
    """The query's tree; ``InvalidInput`` naming what is wrong."""
    if len(text) > MAX_QUERY_LENGTH:
        raise InvalidInput(f"the query is longer than {MAX_QUERY_LENGTH} characters")
    parser = _Parser(text)
    node = parser.either()
    if parser.pos < len(parser.tokens):
        raise InvalidInput(f"unexpected {parser.tokens[parser.pos][1]!r} in the query")
    if node is None:
        raise InvalidInput("the query has no word to search for")
    _check_negation(node)
    return node


def _check_negation(node: Node) -> None:
    """NOT only narrows what other words found (``deploy NOT staging``): a query that
    asks for everything without a word cannot be answered from an index."""
    if isinstance(node, Not):
        raise InvalidInput("NOT needs a word that must appear beside it in the query, as "
                           "in: deploy NOT staging")
    if isinstance(node, Any):
        for part in node.parts:
            _check_negation(part)
    elif isinstance(node, All):
        positive = [p for p in node.parts if not isinstance(p, Not)]
        if not positive:
            _check_negation(node.parts[0])
        for part in positive:
            _check_negation(part)
        for part in node.parts:
            if isinstance(part, Not):
                _check_negation_inside(part.part)


def _check_negation_inside(node: Node) -> None:
    """What follows a NOT is itself a query (``NOT (a OR b)``), checked the same way."""
    if not isinstance(node, Term):
        _check_negation(node)


class _Parser:
    """Recursive descent: either := both (OR both)*; both := unary+ (AND optional);
    unary := NOT unary | -term | ( either ) | term."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str, object]] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:  # only trailing space is left
                break
            pos = match.end()
            quote, phrase, closed, open_, close, minus, word = match.groups()
            if quote:
                if not closed:
                    raise InvalidInput("a quoted phrase in the query is not closed")
                self.tokens.append(("term", phrase, Term(tuple(words_of(phrase)))))
            elif open_ or close:
                self.tokens.append(("(" if open_ else ")", open_ or close, None))
            elif word in ("AND", "OR", "NOT") and not minus:
                self.tokens.append((word, word, None))
            else:
                self.tokens.append(("term", minus + word, _term(word, negated=bool(minus))))
        self.pos = 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def either(self) -> Node | None:
        parts = [self.both()]
        while self._peek() == "OR":
            self.pos += 1
            parts.append(self.both())
        kept = [p for p in parts if p is not None]
        if not kept and len(parts) == 1:
            return None  # no word at all: parse() says so
        if len(kept) != len(parts):
            raise InvalidInput("OR needs a term on each side in the query")
        return kept[0] if len(kept) == 1 else Any(tuple(kept))

    def both(self) -> Node | None:
        parts: list[Node] = []
        while self._peek() not in (None, "OR", ")"):
            if self._peek() == "AND":
                self.pos += 1
                if not parts or self._peek() in (None, "OR", ")", "AND"):
                    raise InvalidInput("AND needs a term on each side in the query")
                continue
            node = self.unary()
            if node is not None:
                parts.append(node)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def unary(self) -> Node | None:
        kind, _, value = self.tokens[self.pos]
        self.pos += 1
        if kind == "NOT":
            if self._peek() in (None, "OR", ")", "AND"):
                raise InvalidInput("NOT needs a term after it in the query")
            inner = self.unary()
            return None if inner is None else Not(inner)
        if kind == "(":
            inner = self.either()
            if self._peek() != ")":
                raise InvalidInput("a parenthesis in the query is not closed")
            self.pos += 1
            return inner
        if kind == ")":
            raise InvalidInput("unexpected ')' in the query")
        assert isinstance(value, Term | Not)
        if isinstance(value, Term) and not value.words:
            return None  # punctuation only: nothing to match
        return value


def _term(raw: str, *, negated: bool) -> Term | Not:
    prefix = raw.endswith("*")
    found = words_of(raw.rstrip("*"))
    term = Term(tuple(found), prefix=prefix and bool(found))
    return Not(term) if negated and found else term


@dataclass(frozen=True)
class Search:
    """What a store is asked to find (see :meth:`mailslot.store.Store.search`).

    Every filter is optional. Dates are UTC ISO 8601 texts (``2026-09-21T14:48:08+00:00``)
    compared with each message's date in UTC; ``since`` is inclusive, ``until`` not.
    """

    match: Node | None = None
    """Words to match in subjects and bodies (ranked, best first); ``None``: every
    message, oldest first."""
    reader: str | None = None
    """Only messages to this agent, broadcasts, and (``sent``) messages from it."""
    sent: bool = False
    sender: str | None = None
    recipient: str | None = None
    since: str | None = None
    until: str | None = None
    thread: str | None = None
    """Only this thread: the message with this id and every message naming it as thread."""
    limit: int = 20
    offset: int = 0
