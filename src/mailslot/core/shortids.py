"""Short ids: a unique prefix or the random tail stands for a whole id, as in git.

``2026-09-21_144808.123456_builder_to_reviewer_7f3a9c2e`` may be given as any prefix of at
least :data:`MIN_PREFIX` characters (``2026-09-21_1448``) or as its random tail
(``7f3a9c2e``), as long as exactly one id the caller may name matches: among open mail
and broadcasts first, then among done mail (:func:`resolve_first`). The service
gathers those ids (from the store's listings, so this works on any backend); this
module only matches. A short form never becomes a path part: what it resolves to is an
id the store itself listed.
"""

from __future__ import annotations

from itertools import compress
from operator import itemgetter

from .errors import InvalidInput, NotFound
from .ids import is_id
from .names import LOWER, Word
from .text import quoted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

MIN_PREFIX = 6
_SHOWN_CANDIDATES = 5
_SHORT = Word(LOWER, LOWER + "_.+-", 1 << 30)  # [a-z0-9][a-z0-9_.+-]*: an id's letters, no '/'


def tail(message_id: str) -> str:
    """The random part at the end of an id (``7f3a9c``)."""
    return message_id.rsplit("_", 1)[-1]


def matches(raw: str, message_id: str) -> bool:
    """Whether ``raw`` names ``message_id``: a long enough prefix, or its tail."""
    return message_id.startswith(raw) or tail(message_id) == raw


def resolve(raw: object, candidates: Iterable[str], *, owner: str = "") -> str:
    """The one candidate ``raw`` names; raises ``InvalidInput`` when ``raw`` is too
    short or ambiguous (listing the candidates) and ``NotFound`` when nothing matches."""
    if not isinstance(raw, str) or raw == "":
        raise InvalidInput("message id is empty")
    if is_id(raw):
        return raw
    if raw.endswith(".md"):
        raise InvalidInput(f"{quoted(raw)} is not a message id (drop the '.md')")
    if len(raw) < MIN_PREFIX or not _SHORT.fullmatch(raw):
        raise InvalidInput(
            f"{quoted(raw)} is not a message id (give the whole id, at least "
            f"{MIN_PREFIX} of its first characters, or its random tail)"
        )
    found = sorted({c for c in candidates if matches(raw, c)})
    if not found:
        where = f" for {owner}" if owner else ""
        raise NotFound(f"no message {quoted(raw)}{where}")
    if len(found) > 1:
        shown = ", ".join(found[:_SHOWN_CANDIDATES])
        left = len(found) - _SHOWN_CANDIDATES
        more = f" and {left} more" if left > 0 else ""
        raise InvalidInput(f"{quoted(raw)} is ambiguous: it could be {shown}{more}")
    return found[0]


def resolve_first(raw: object, tiers: Iterable[Iterable[str]], *, owner: str = "") -> str:
    """:func:`resolve` among the first of ``tiers`` (each listed only when reached) that
    holds a match: open mail is named before history, so a short form shown for open
    mail never needs done mail listed to be unique, however much of it there is."""
    for tier in tiers:
        try:
            return resolve(raw, tier, owner=owner)
        except NotFound:
            continue
    return resolve(raw, (), owner=owner)


def short_forms(ids: Iterable[str], among: Iterable[str]) -> dict[str, str]:
    """For each of ``ids``, its tail when no other id of ``among`` (nor of ``ids``)
    shares it, else the whole id: the shortest form :func:`resolve` turns back into the
    same id.

    ``among`` is every id the caller may name (10,000 and more for a full inbox), where
    one id may come more than once (a message to several mailboxes listed with each, or
    with what the caller sent): ids are counted once each. It is counted without a
    Python step per id: an id has the tail ``t`` exactly when it ends with ``_t`` (a
    tail holds no ``_``), so only the ids with a wanted ending are kept, by slicing each
    id's last characters in C (one pass per distinct tail length).
    """
    wanted = {message_id: tail(message_id) for message_id in ids}
    endings: dict[int, set[str]] = {}
    for key in wanted.values():
        if len(key) >= MIN_PREFIX:  # shorter tails are never shown, so never counted
            endings.setdefault(len(key) + 1, set()).add("_" + key)
    counts: dict[str, int] = {}
    pool = [*among, *wanted]
    for length, want in endings.items():
        cut = itemgetter(slice(-length, None))
        holders = set(compress(pool, map(want.__contains__, map(cut, pool))))
        for ending in map(cut, holders):
            counts[ending] = counts.get(ending, 0) + 1
    forms: dict[str, str] = {}
    for message_id, key in wanted.items():
        ok = len(key) >= MIN_PREFIX and counts.get("_" + key, 0) <= 1
        forms[message_id] = key if ok else message_id
    return forms
