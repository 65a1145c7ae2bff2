"""Message ids: sortable by time, unique without a lock, safe as a file name.

``2026-09-21_144808.123456_builder_to_reviewer_7f3a9c2e``: UTC time to the microsecond,
sender, first recipient and 32 random bits. A party on a peer node is named by its
address, ``AGENT@NODE`` (:mod:`mailslot.core.addresses`), so mail from another node
never reads as a local agent's: ``..._ana@b_to_bob_...``. No text a sender chose: an id reaches
models outside the framing (wake notices, answer hints), so a subject must never ride
in it. Ids written before carry a slug of the subject and 24 random bits
(``..._to_reviewer_initial-handshake_7f3a9c``); they still parse, and
:func:`reference` drops the slug where an id is only named. Agent names cannot hold
``_``, so the parts never run together. Delivery links with O_EXCL semantics, so the
rare collision is retried with a new id rather than overwriting.
"""

from __future__ import annotations

import os
import sys

from .errors import InvalidInput
from .text import quoted

TYPE_CHECKING = False  # datetime is not loaded on the hook path, which only reads ids
if TYPE_CHECKING:
    from collections.abc import Iterable
    from re import Pattern

    from .dates import datetime

MAX_ID_LENGTH = 200
ID_PATTERN = (r"\d{4}-\d{2}-\d{2}_\d{6}\.\d{6}_[a-z0-9-]+(?:@[a-z0-9-]+)?"
              r"_to_[a-z0-9+-]+(?:@[a-z0-9+-]+)?"
              r"(?:_[0-9a-f]{8}|_[a-z0-9-]*_[0-9a-f]{6})")  # new | with a subject slug
"""The shape of an id (ASCII digits), as docs/format.md gives it. A hook checks ids with
:func:`_shaped`, which reads this shape with string methods: importing :mod:`re` (with
``enum`` and ``functools``) and compiling would cost each hook's start about 5 ms."""
_HEAD_UNDERSCORES = 4  # date_time _sender _to _recipient: a slugged id has two more
_DIGIT_AS_ZERO = str.maketrans("123456789", "000000000")
_STAMP = "0000-00-00_000000.000000_"  # the time, every ASCII digit read as 0
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-"
_HEX = "0123456789abcdef"
_MANY = 2000
"""From this many file names on, a listing is matched with the compiled pattern even on
the hook path: there the import and compile cost less than reading each name with
string methods."""
_compiled: list[Pattern[str]] = []


def _shaped(text: str) -> bool:
    """True when ``text`` matches :data:`ID_PATTERN` whole. Agent names hold no ``_``, so
    splitting at it finds the parts exactly; ``str.strip(chars)`` is empty only when
    every character is one of ``chars``."""
    if text[:25].translate(_DIGIT_AS_ZERO) != _STAMP:
        return False
    parts = text[25:].split("_")
    if len(parts) == 4:
        slug, tail, tail_length = "", parts[3], 8
    elif len(parts) == 5:
        slug, tail, tail_length = parts[3], parts[4], 6
    else:
        return False
    sender, to, recipient = parts[0], parts[1], parts[2]
    return (to == "to" and len(tail) == tail_length and not tail.strip(_HEX)
            and _addressed(sender, _NAME_CHARS) and _addressed(recipient, _NAME_CHARS + "+")
            and not slug.strip(_NAME_CHARS))


def _addressed(part: str, chars: str) -> bool:
    """``part`` is made of ``chars``, with at most one ``@`` between two non-empty
    halves (a party on a peer node: ``ana@b``)."""
    name, at, node = part.partition("@")
    return (name != "" and not name.strip(chars)
            and (not at or (node != "" and not node.strip(chars))))


def _id_file_pattern() -> Pattern[str]:
    """``<id>.md``, compiled once, for long listings."""
    if not _compiled:
        import re

        _compiled.append(re.compile(ID_PATTERN + r"\.md", re.ASCII))
    return _compiled[0]


def new_id(now: datetime, sender: str, recipients: list[str]) -> str:
    """A fresh id; ``now`` must be timezone-aware (it is written in UTC)."""
    from .dates import UTC

    utc = now.astimezone(UTC)
    first = recipients[0] if len(recipients) == 1 else f"{recipients[0]}+{len(recipients) - 1}"
    # os.urandom as secrets.token_hex does, without its imports
    return f"{utc:%Y-%m-%d_%H%M%S}.{utc.microsecond:06d}_{sender}_to_{first}_{os.urandom(4).hex()}"


def reference(message_id: str) -> str:
    """The id as a notice names it: an older id's subject slug left out.

    Only where an id is named, never where a command must find it.
    """
    slugged = _slugged(message_id)
    return f"{slugged[0]}_{slugged[2]}" if slugged else message_id


def shown(message_id: str) -> str:
    """The id as mail shown to a model names it, where a command must also find it: a
    new id whole; an older id carrying a subject slug by its random tail, which every
    command taking an id accepts (see :mod:`mailslot.core.shortids`). Either way no text a
    sender chose is shown outside the framing."""
    slugged = _slugged(message_id)
    return slugged[2] if slugged else message_id


def _slugged(message_id: str) -> list[str] | None:
    """``[head, slug, tail]`` of an older id that carries a subject slug, else ``None``.

    The id pattern's second form, told apart from the first by its one more ``_`` (no
    part holds one), so no pattern of its own is compiled at every hook's start.
    """
    if message_id.count("_") != _HEAD_UNDERSCORES + 2 or not _shaped(message_id):
        return None
    return message_id.rsplit("_", 2)


def check_id(raw: object) -> str:
    """Return ``raw`` if it is a well-formed id, else raise :class:`InvalidInput`.

    Only ids of the exact shape above pass, so no id can carry ``/``, ``..`` or any
    other path part.
    """
    if not isinstance(raw, str) or raw == "":
        raise InvalidInput("message id is empty")
    if not is_id(raw):
        raise InvalidInput(f"{quoted(raw)} is not a message id")
    return raw


def is_id(name: str) -> bool:
    """True when ``name`` is shaped like an id (used to skip stray files in folders)."""
    return len(name) <= MAX_ID_LENGTH and _shaped(name)


_KNOWN: dict[str, str] = {}
"""File names already found to be ``<id>.md``, each with its id. That never changes,
and a long-lived reader (the MCP server, the web page) lists the same 10,000 names
again and again: looking them up costs a tenth of matching them. A listing holding a
name not known here (new mail, a stray file) is matched whole, as before."""
_MAX_KNOWN = 1 << 17  # about 20 MB at most; forgotten all at once when full


def ids_of_files(names: Iterable[str], *, remember: bool = False) -> list[str]:
    """The ids among file names ``<id>.md``, stray files skipped, in the given order.

    The inbox lists every file of a folder: it is matched with one compiled filter when
    :mod:`re` is loaded anyway (every command but a hook) or the listing is long, else
    name by name with string methods (the result is the same), and when every name is in
    :data:`_KNOWN` each costs one look-up. ``remember``: add what was matched there (a
    one-shot command would only pay for it; see :func:`~.store.fs.ids_in`).
    """
    names = names if isinstance(names, list) else list(names)
    known = _KNOWN
    if known:
        found = list(map(known.get, names))
        if None not in found:
            return list(filter(None, found))  # (none is None; filter types it list[str])
    matched: Iterable[str]
    if len(names) >= _MANY or "re" in sys.modules:
        matched = filter(_id_file_pattern().fullmatch, names)
    else:
        matched = (n for n in names if n[-3:] == ".md" and _shaped(n[:-3]))
    valid = [n for n in matched if len(n) <= MAX_ID_LENGTH + 3]
    ids = [n[:-3] for n in valid]
    if remember:
        if len(known) + len(valid) > _MAX_KNOWN:
            known.clear()
        known.update(zip(valid, ids, strict=True))
    return ids


def sender_of(message_id: str) -> str:
    """The sender named in an id, read without opening the file."""
    return message_id.split("_", 3)[2]


def recipient_of(message_id: str) -> str | None:
    """The one recipient named in an id (``all`` for a broadcast), or ``None`` when it
    went to several (``reviewer+2``): who holds a copy, without looking everywhere."""
    named = message_id.split("_", 5)[4]
    return None if "+" in named else named
