"""Message ids: sortable by time, unique without a lock, safe as a file name.

``2026-09-21_144808.123456_builder_to_reviewer_7f3a9c2e``: UTC time to the microsecond,
sender, first recipient and 32 random bits. No text a sender chose: an id reaches
models outside the framing (wake notices, answer hints), so a subject must never ride
in it. Ids written before carry a slug of the subject and 24 random bits
(``..._to_reviewer_initial-handshake_7f3a9c``); they still parse, and
:func:`reference` drops the slug where an id is only named. Agent names cannot hold
``_``, so the parts never run together. Delivery links with O_EXCL semantics, so the
rare collision is retried with a new id rather than overwriting.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from .errors import InvalidInput
from .text import quoted

TYPE_CHECKING = False  # datetime is not loaded on the hook path, which only reads ids
if TYPE_CHECKING:
    from .dates import datetime

MAX_ID_LENGTH = 200
_HEAD = r"\d{4}-\d{2}-\d{2}_\d{6}\.\d{6}_[a-z0-9-]+_to_[a-z0-9+-]+"
_ID_PATTERN = _HEAD + r"(?:_[0-9a-f]{8}|_[a-z0-9-]*_[0-9a-f]{6})"  # new | with a slug
_ID_FILE = re.compile(_ID_PATTERN + r"\.md", re.ASCII)
"""The one compiled pattern (a compile costs every hook's start about 0.1 ms): a file
name ``<id>.md`` matches it, and a bare id is matched with ``.md`` appended."""
_HEAD_UNDERSCORES = 4  # date_time _sender _to _recipient: a slugged id has two more


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
    if (message_id.count("_") != _HEAD_UNDERSCORES + 2
            or not _ID_FILE.fullmatch(message_id + ".md")):
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
    return len(name) <= MAX_ID_LENGTH and _ID_FILE.fullmatch(name + ".md") is not None


_KNOWN: dict[str, str] = {}
"""File names already found to be ``<id>.md``, each with its id. That never changes,
and a long-lived reader (the MCP server, the web page) lists the same 10,000 names
again and again: looking them up costs a tenth of matching them. A listing holding a
name not known here (new mail, a stray file) is matched whole, as before."""
_MAX_KNOWN = 1 << 17  # about 20 MB at most; forgotten all at once when full


def ids_of_files(names: Iterable[str], *, remember: bool = False) -> list[str]:
    """The ids among file names ``<id>.md``, stray files skipped, in the given order.

    The inbox lists every file of a folder, so this runs C-level steps only: one regex
    filter (rather than :func:`is_id` per name; the result is the same), or one look-up
    per name when all of them are in :data:`_KNOWN`. ``remember``: add what was matched
    there (a one-shot command would only pay for it; see :func:`~.store.fs.ids_in`).
    """
    names = names if isinstance(names, list) else list(names)
    known = _KNOWN
    if known:
        found = list(map(known.get, names))
        if None not in found:
            return list(filter(None, found))  # (none is None; filter types it list[str])
    valid = [n for n in filter(_ID_FILE.fullmatch, names) if len(n) <= MAX_ID_LENGTH + 3]
    ids = [n[:-3] for n in valid]
    if remember:
        if len(known) + len(valid) > _MAX_KNOWN:
            known.clear()
        known.update(zip(valid, ids, strict=True))
    return ids


def sender_of(message_id: str) -> str:
    """The sender named in an id, read without opening the file."""
    return message_id.split("_", 3)[2]
