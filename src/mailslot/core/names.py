"""Agent names: the one place that says what a name may be.

A name is 1-64 of ``a-z 0-9 -``, not starting with ``-``, matched case-insensitively
and stored lowercased. Some names are reserved: they can be neither an identity nor a
recipient, because they mean something to mailslot itself.
"""

from __future__ import annotations

from .errors import InvalidInput
from .text import quoted

SYSTEM_SENDER = "mailslot"
"""The sender of mailslot's own notices (wake failures and the like)."""

BROADCAST_RECIPIENT = "all"
RESERVED = frozenset({BROADCAST_RECIPIENT, "unknown", SYSTEM_SENDER})
MAX_NAME_LENGTH = 64

LOWER = "abcdefghijklmnopqrstuvwxyz0123456789"
"""What a lower-case word is made of (for :class:`Word`)."""
_ALNUM = LOWER + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class Word:
    """The ``fullmatch`` of a pattern ``[FIRST][REST]{0,MOST-1}``, without compiling one.

    Every hook checks names and session keys, and each ``re`` compile costs it about
    0.1 ms at start; this check is two string operations (``strip`` leaves nothing
    exactly when every character is in ``rest``).
    """

    __slots__ = ("first", "most", "rest")

    def __init__(self, first: str, rest: str, most: int) -> None:
        self.first, self.rest, self.most = first, rest, most

    def fullmatch(self, raw: str) -> bool:
        return (0 < len(raw) <= self.most and raw[0] in self.first
                and not raw.strip(self.rest))


_NAME = Word(LOWER, LOWER + "-", MAX_NAME_LENGTH)  # [a-z0-9][a-z0-9-]{0,63}
SESSION_KEY = Word(_ALNUM, _ALNUM + "._-", 128)  # [A-Za-z0-9][A-Za-z0-9._-]{0,127}
"""What a session key may be: a word safe as a file or row name (a host's session id as
given when it is one; :func:`session_key` hashes any other)."""


def session_key(raw: str) -> str:
    """A host's session id as a safe file name: as given if it is one, else a hash."""
    if SESSION_KEY.fullmatch(raw):
        return raw
    import hashlib  # rare, and hashlib is slow to load

    return "h-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _fold(raw: str) -> str:
    """Lowercase ASCII only: ``str.lower`` maps some other letters to ASCII (the Kelvin
    sign to ``k``), which would let a name outside ``a-z`` pass as one inside it."""
    return raw.lower() if raw.isascii() else raw


GROUP_MARK = "+"
"""A group gate's members and requests are kept under ``+GROUP`` where an
agent's are kept under its name (no agent name starts with ``+``)."""
GROUP_ACCEPT = "group:"
"""The gate setting of an inbox gated by a group is ``group:GROUP``."""


def is_gate_key(raw: str) -> bool:
    """Is ``raw`` an agent name or a group's key ``+GROUP`` (safe as a file name)?"""
    return is_valid_name(raw[1:] if raw.startswith(GROUP_MARK) else raw)


def is_accept(raw: str) -> bool:
    """Is ``raw`` a gate setting: ``open``, ``members`` or ``group:GROUP``?"""
    if raw.startswith(GROUP_ACCEPT):
        return is_valid_name(raw[len(GROUP_ACCEPT):])
    return raw in ("open", "members")


def is_valid_name(raw: str) -> bool:
    """True when ``raw`` (any case) is a usable agent name."""
    name = _fold(raw)
    return bool(_NAME.fullmatch(name)) and name not in RESERVED


def check_name(raw: object, role: str = "agent name") -> str:
    """Return the stored (lowercased) form of ``raw`` or raise :class:`InvalidInput`."""
    if not isinstance(raw, str) or raw == "":
        raise InvalidInput(f"{role} is empty")
    name = _fold(raw)
    if name.startswith("_") or name in RESERVED:
        raise InvalidInput(f"{role} {quoted(raw)} is reserved")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(f"{role} {quoted(raw)} is {len(name)} characters; the limit is 64")
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"{role} {quoted(raw)} is not valid: use a-z, 0-9 and '-', not starting with '-'"
        )
    return name


def closest(name: str, known: list[str], most: int = 2) -> str | None:
    """The known name within ``most`` edits of ``name`` (the nearest; ties: first in
    order), or ``None``: what "did you mean" suggests for a mistyped recipient."""
    best: tuple[int, str] | None = None
    for other in known:
        if abs(len(other) - len(name)) > most:
            continue
        distance = _edits(name, other)
        if distance <= most and (best is None or distance < best[0]):
            best = (distance, other)
    return None if best is None else best[1]


def _edits(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def from_folder(raw: str) -> str:
    """A git toplevel's name made into an agent name: ASCII-folded, lowercased, and
    ``_``, ``.`` and spaces turned into ``-`` (``My_App`` → ``my-app``, ``Über`` →
    ``uber``). The result may still be invalid or reserved; the service then refuses it,
    as it would the same name given with ``--agent``. A name starting with ``_`` is
    reserved, so it keeps its ``_`` (``_under`` stays ``_under``, never ``under``)."""
    if not raw.isascii():
        import unicodedata  # only for names outside ASCII

        raw = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    name = raw.lower()
    mark = "_" if name.startswith("_") else ""
    for sep in "_. ":
        name = name.replace(sep, "-")
    while "--" in name:
        name = name.replace("--", "-")
    return mark + name.strip("-")
